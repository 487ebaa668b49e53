import Foundation
import KeelContract
import KeelCore
import KeelTesting

/// The JSON file `keel serve --script` reads: an array of scripted responses, answered in order.
///
/// ```json
/// [
///   {"status": 503, "headers": {"Retry-After": "2"}},
///   {"status": 200, "body": "{\"id\": 1}", "headers": {"Content-Type": "application/json"},
///    "headersDelayMs": 200, "throttle": {"bytes": 16, "periodMs": 50}},
///   {"effect": "disconnectDuringResponseBody", "afterBytes": 4, "body": "truncated body"}
/// ]
/// ```
struct ResponseScript: Decodable {
    struct Entry: Decodable {
        var status: Int?
        var headers: [String: String]?
        var body: String?
        var chunkSize: Int?
        var headersDelayMs: Int?
        var bodyDelayMs: Int?
        var throttle: Throttle?
        var effect: String?
        var afterBytes: Int?

        struct Throttle: Decodable {
            var bytes: Int
            var periodMs: Int

            private enum CodingKeys: String, CodingKey, CaseIterable { case bytes, periodMs }

            init(from decoder: any Decoder) throws {
                try JSONMemberKey.refuseUnknown(in: decoder, allowed: CodingKeys.allCases.map(\.rawValue))
                let container = try decoder.container(keyedBy: CodingKeys.self)
                bytes = try container.decode(Int.self, forKey: .bytes)
                periodMs = try container.decode(Int.self, forKey: .periodMs)
            }
        }

        private enum CodingKeys: String, CodingKey, CaseIterable {
            case status, headers, body, chunkSize, headersDelayMs, bodyDelayMs, throttle, effect, afterBytes
        }

        /// Every member is optional, so a misspelt one (`"stauts": 503`) would silently answer the default:
        /// unknown members are refused.
        init(from decoder: any Decoder) throws {
            try JSONMemberKey.refuseUnknown(in: decoder, allowed: CodingKeys.allCases.map(\.rawValue))
            let container = try decoder.container(keyedBy: CodingKeys.self)
            status = try container.decodeIfPresent(Int.self, forKey: .status)
            headers = try container.decodeIfPresent([String: String].self, forKey: .headers)
            body = try container.decodeIfPresent(String.self, forKey: .body)
            chunkSize = try container.decodeIfPresent(Int.self, forKey: .chunkSize)
            headersDelayMs = try container.decodeIfPresent(Int.self, forKey: .headersDelayMs)
            bodyDelayMs = try container.decodeIfPresent(Int.self, forKey: .bodyDelayMs)
            throttle = try container.decodeIfPresent(Throttle.self, forKey: .throttle)
            effect = try container.decodeIfPresent(String.self, forKey: .effect)
            afterBytes = try container.decodeIfPresent(Int.self, forKey: .afterBytes)
        }
    }

    var responses: [TestResponse]

    init(from decoder: any Decoder) throws {
        var container = try decoder.unkeyedContainer()
        var responses: [TestResponse] = []
        while !container.isAtEnd {
            let index = container.currentIndex
            let entry = try container.decode(Entry.self)
            do {
                responses.append(try Self.response(from: entry))
            } catch let problem as Problem {
                // At the entry's own index: the container has moved past it (found in an outside audit: the
                // error named the next entry).
                throw DecodingError.dataCorrupted(
                    .init(
                        codingPath: container.codingPath + [EntryIndex(intValue: index)],
                        debugDescription: "response [\(index)]: \(problem.message)"))
            }
        }
        self.responses = responses
    }

    struct Problem: Error { let message: String }

    /// An entry's place in the script, as a coding path element.
    struct EntryIndex: CodingKey {
        let intValue: Int?
        var stringValue: String { "Index \(intValue ?? 0)" }
        init(intValue: Int) { self.intValue = intValue }
        init?(stringValue: String) { nil }
    }

    static let effectNames = [
        "keepOpen", "disconnectAtEnd", "disconnectAtStart", "disconnectAfterRequest", "disconnectDuringRequestBody",
        "disconnectDuringResponseBody", "halfCloseAfterRequest", "noResponse", "stallAtStart", "resetAtStart",
        "resetAfterRequest", "resetDuringResponseBody", "shutdownInputAtEnd", "shutdownOutputAtEnd",
        "stallDuringResponseBody",
    ]

    private static func response(from entry: Entry) throws -> TestResponse {
        let status = entry.status ?? 200
        guard (100...999).contains(status) else { throw Problem(message: "status \(status) is not a three-digit code") }
        var headers = HeaderFields()
        for (name, value) in (entry.headers ?? [:]).sorted(by: { $0.key < $1.key }) {
            headers.append(name: name, value: value)
        }
        var response = TestResponse(status: status, headers: headers, body: Data((entry.body ?? "").utf8))
        response.socketEffect = try effect(named: entry.effect ?? "keepOpen", afterBytes: entry.afterBytes)
        if let chunkSize = entry.chunkSize {
            guard chunkSize > 0 else { throw Problem(message: "chunkSize must be positive") }
            response = response.chunked(size: chunkSize)
        }
        response.headersDelay = try milliseconds(entry.headersDelayMs, "headersDelayMs")
        response.bodyDelay = try milliseconds(entry.bodyDelayMs, "bodyDelayMs")
        if let throttle = entry.throttle {
            guard throttle.bytes > 0 else { throw Problem(message: "throttle.bytes must be positive") }
            response = response.throttled(
                bytes: throttle.bytes, per: try milliseconds(throttle.periodMs, "throttle.periodMs"))
        }
        return response
    }

    private static func milliseconds(_ value: Int?, _ name: String) throws -> Duration {
        guard let value else { return .zero }
        guard (0...3_600_000).contains(value) else { throw Problem(message: "\(name) must be 0...3600000") }
        return .milliseconds(value)
    }

    private static func effect(named name: String, afterBytes: Int?) throws -> SocketEffect {
        func bytes() throws -> Int {
            guard let afterBytes, afterBytes >= 0 else {
                throw Problem(message: "effect \(name) needs \"afterBytes\" ≥ 0")
            }
            return afterBytes
        }
        switch name {
        case "keepOpen": return .keepOpen
        case "disconnectAtEnd": return .disconnectAtEnd
        case "disconnectAtStart": return .disconnectAtStart
        case "disconnectAfterRequest": return .disconnectAfterRequest
        case "disconnectDuringRequestBody": return .disconnectDuringRequestBody(afterBytes: try bytes())
        case "disconnectDuringResponseBody": return .disconnectDuringResponseBody(afterBytes: try bytes())
        case "halfCloseAfterRequest": return .halfCloseAfterRequest
        case "noResponse": return .noResponse
        case "stallAtStart": return .stallAtStart
        case "resetAtStart": return .resetAtStart
        case "resetAfterRequest": return .resetAfterRequest
        case "resetDuringResponseBody": return .resetDuringResponseBody(afterBytes: try bytes())
        case "shutdownInputAtEnd": return .shutdownInputAtEnd
        case "shutdownOutputAtEnd": return .shutdownOutputAtEnd
        case "stallDuringResponseBody": return .stallDuringResponseBody(afterBytes: try bytes())
        default:
            throw Problem(message: "unknown effect \"\(name)\"; expected one of \(effectNames.joined(separator: ", "))")
        }
    }

    /// Reads and validates the script at `path`.
    static func load(path: String) throws(ScriptError) -> [TestResponse] {
        // Read as the other commands read their input files: a pipe (`--script <(...)`) is a file too. Why it
        // cannot be read is looked up only when it cannot.
        guard let data = readInputFile(path) else {
            var isDirectory: ObjCBool = false
            let why =
                !FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
                ? "no such file" : isDirectory.boolValue ? "it is a directory" : "permission denied or a read error"
            throw ScriptError(message: "cannot read script \(path): \(why)")
        }
        if let problem = strictJSONProblem(data) { throw ScriptError(message: "script \(path) is \(problem)") }
        do {
            return try JSONDecoder().decode(ResponseScript.self, from: data).responses
        } catch let DecodingError.dataCorrupted(context) where !context.codingPath.isEmpty {
            // A value the script's type cannot hold (a status of 200.5, a number beyond Int): the JSON is valid,
            // the value is not; the decoder's own text for it ("not valid JSON") says otherwise.
            throw ScriptError(
                message: "script \(path): at \(pathText(context.codingPath)): \(context.debugDescription)")
        } catch let DecodingError.dataCorrupted(context) {
            // Foundation's decoder reports a number an Int cannot hold (200.5, 10^22) as "not valid JSON", with
            // no place: the file is valid JSON (checked above), so name the number and where it is.
            if let misfit = misfitNumber(in: data) { throw ScriptError(message: "script \(path): \(misfit)") }
            let detail = (context.underlyingError as NSError?)?.userInfo[NSDebugDescriptionErrorKey] as? String
            throw ScriptError(message: "script \(path) is not valid: \(detail ?? context.debugDescription)")
        } catch let DecodingError.typeMismatch(type, context), let DecodingError.valueNotFound(type, context) {
            throw ScriptError(message: "script \(path): at \(pathText(context.codingPath)) expected \(type)")
        } catch let DecodingError.keyNotFound(key, context) {
            throw ScriptError(
                message: "script \(path): at \(pathText(context.codingPath)) missing \"\(key.stringValue)\"")
        } catch {
            throw ScriptError(message: "script \(path) is not valid: \(error)")
        }
    }

    /// The first number in an integer member of the script (`status`, the delays, sizes and counts) that is
    /// not a whole number within Int's range, with where it is; nil when there is none.
    static func misfitNumber(in data: Data) -> String? {
        guard case .array(let entries)? = try? JSONValue(parsing: data) else { return nil }
        let integers = ["status", "chunkSize", "headersDelayMs", "bodyDelayMs", "afterBytes"]
        for (index, entry) in entries.enumerated() {
            var members: [(String, JSONValue?)] = integers.map { ("[\(index)].\($0)", entry[$0]) }
            members += ["bytes", "periodMs"].map { ("[\(index)].throttle.\($0)", entry["throttle"]?[$0]) }
            for (place, value) in members {
                guard case .number(let number)? = value, number.int64.flatMap({ Int(exactly: $0) }) == nil else {
                    continue
                }
                return "at \(place) \(number) is not a whole number an Int can hold"
            }
        }
        return nil
    }

    private static func pathText(_ path: [any CodingKey]) -> String {
        path.isEmpty ? "top level" : path.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
    }
}

/// The script file could not be used (exit status 2).
struct ScriptError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
