public import Foundation
import KeelCore

// The contract file: `{"routes": [{"id": "home", "root": true, "access": "public"}, ...]}`, written by
// `NavigationContract.export()` and read by `keel navigation`. Members with their default value (false,
// no parameters, no deep link, no input) are left out; unknown members are refused, so a typo never
// silently changes a route.

extension NavigationContract {
    /// The contract as JSON (sorted keys, routes in declaration order), for `keel navigation check` and
    /// `simulate`.
    public func export() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(File(routes: routes.map(File.RouteEntry.init)))
    }

    /// Reads a contract file.
    ///
    /// - Throws: ``NavigationContractError`` `malformed` (not JSON, a wrong type, an unknown member, an
    ///   unknown access or policy) or `refused` (an unsound declaration, with every problem).
    public init(json: Data) throws(NavigationContractError) {
        try self.init(Self.routes(json: json))
    }

    /// The routes of a contract file, read but not yet validated (tools list every problem of an unsound
    /// file with ``problems(in:)``).
    ///
    /// - Throws: ``NavigationContractError`` `malformed`.
    public static func routes(json: Data) throws(NavigationContractError) -> [Route] {
        do { return try JSONDecoder().decode(File.self, from: json).routes.map(\.route) } catch {
            throw NavigationContractError(code: .malformed, message: describe(error))
        }
    }

    private static func describe(_ error: any Error) -> String {
        (error as? DecodingError)?.readableDescription ?? "\(error)"
    }

    struct File: Codable {
        var routes: [RouteEntry]

        private enum Keys: String, CodingKey, CaseIterable { case routes }

        init(routes: [RouteEntry]) { self.routes = routes }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: JSONMemberKey.self)
            try JSONMemberKey.refuseUnknown(in: container, allowed: Keys.allCases.map(\.rawValue))
            routes = try container.decode([RouteEntry].self, forKey: JSONMemberKey("routes"))
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(routes, forKey: .routes)
        }

        struct RouteEntry: Codable {
            var route: Route

            init(_ route: Route) { self.route = route }

            private enum Keys: String, CodingKey, CaseIterable {
                case id, root, parent, access, modal, sensitive, parameters, deepLink, input
            }
            private enum InputKeys: String, CodingKey, CaseIterable { case policy, onDeath }

            init(from decoder: any Decoder) throws {
                let container = try decoder.container(keyedBy: JSONMemberKey.self)
                try JSONMemberKey.refuseUnknown(in: container, allowed: Keys.allCases.map(\.rawValue))
                func key(_ key: Keys) -> JSONMemberKey { JSONMemberKey(key.rawValue) }
                let accessText = try container.decode(String.self, forKey: key(.access))
                guard let access = Route.Access(accessText) else {
                    throw DecodingError.dataCorruptedError(
                        forKey: key(.access), in: container,
                        debugDescription: "access \"\(accessText)\" is not public, signedIn, account or custom:NAME")
                }
                var input: Route.Input?
                if container.contains(key(.input)) {
                    let nested = try container.nestedContainer(keyedBy: JSONMemberKey.self, forKey: key(.input))
                    try JSONMemberKey.refuseUnknown(in: nested, allowed: InputKeys.allCases.map(\.rawValue))
                    let policyText = try nested.decode(String.self, forKey: JSONMemberKey("policy"))
                    guard let policy = Route.Input.Policy(rawValue: policyText) else {
                        throw DecodingError.dataCorruptedError(
                            forKey: JSONMemberKey("policy"), in: nested,
                            debugDescription:
                                "input policy \"\(policyText)\" is not saveDraft, confirmDiscard or warnBeforeLoss")
                    }
                    var onDeath: Route.Input.DeathBehaviour?
                    if let deathText = try nested.decodeIfPresent(String.self, forKey: JSONMemberKey("onDeath")) {
                        guard let behaviour = Route.Input.DeathBehaviour(rawValue: deathText) else {
                            throw DecodingError.dataCorruptedError(
                                forKey: JSONMemberKey("onDeath"), in: nested,
                                debugDescription: "onDeath \"\(deathText)\" is not save or drop")
                        }
                        onDeath = behaviour
                    }
                    input = Route.Input(policy: policy, onDeath: onDeath)
                }
                route = Route(
                    try container.decode(String.self, forKey: key(.id)),
                    parent: try container.decodeIfPresent(String.self, forKey: key(.parent)), access: access,
                    isModal: try container.decodeIfPresent(Bool.self, forKey: key(.modal)) ?? false,
                    isSensitive: try container.decodeIfPresent(Bool.self, forKey: key(.sensitive)) ?? false,
                    isRoot: try container.decodeIfPresent(Bool.self, forKey: key(.root)) ?? false,
                    parameters: try container.decodeIfPresent([String].self, forKey: key(.parameters)) ?? [],
                    deepLink: try container.decodeIfPresent(String.self, forKey: key(.deepLink)), input: input)
            }

            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: Keys.self)
                try container.encode(route.id, forKey: .id)
                if route.isRoot { try container.encode(true, forKey: .root) }
                try container.encodeIfPresent(route.parent, forKey: .parent)
                try container.encode(route.access.description, forKey: .access)
                if route.isModal { try container.encode(true, forKey: .modal) }
                if route.isSensitive { try container.encode(true, forKey: .sensitive) }
                if !route.parameters.isEmpty { try container.encode(route.parameters, forKey: .parameters) }
                try container.encodeIfPresent(route.deepLink, forKey: .deepLink)
                if let input = route.input {
                    var nested = container.nestedContainer(keyedBy: InputKeys.self, forKey: .input)
                    try nested.encode(input.policy.rawValue, forKey: .policy)
                    try nested.encodeIfPresent(input.onDeath?.rawValue, forKey: .onDeath)
                }
            }
        }
    }
}
