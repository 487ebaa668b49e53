import KeelContract

/// Writes ``TypePlan``s as Swift source: `Codable`, `Hashable`, `Sendable` value types with explicit coding,
/// so a required member that is missing fails to decode and an optional one may be absent.
struct SwiftEmitter {
    let access: ContractGenerator.AccessLevel
    /// Top-level names the contract declares; a library type with the same name is written module-qualified.
    let topLevelNames: Set<String>
    private var lines: [String] = []
    private var indentation = ""
    /// Modules used in declarations (need `public import` for public access) and anywhere.
    private(set) var modulesInSignatures: Set<String> = []
    private(set) var modulesUsed: Set<String> = []

    init(access: ContractGenerator.AccessLevel, topLevelNames: Set<String>) {
        self.access = access
        self.topLevelNames = topLevelNames
    }

    var text: String { lines.joined(separator: "\n") + "\n" }
    /// How many lines have been written.
    var lineCount: Int { lines.count }

    private static let modules: [String: String] = [
        "Date": "Foundation", "Decimal": "Foundation",
        "JSONValue": "KeelContract", "Extensible": "KeelContract", "ExtensibleEnum": "KeelContract",
        "ClosedEnum": "KeelContract", "ClosedIntegerEnum": "KeelContract",
        "undeclaredMarkerValue": "KeelContract",
        "UndeclaredEnumValue": "KeelContract", "Nullable": "KeelContract", "JSONKind": "KeelContract",
    ]

    /// A library type's name, module-qualified when the contract declares a type of the same name.
    private mutating func library(_ name: String, inSignature: Bool) -> String {
        let module = Self.modules[name] ?? "Swift"
        if module != "Swift" {
            modulesUsed.insert(module)
            if inSignature { modulesInSignatures.insert(module) }
        }
        return topLevelNames.contains(name) ? "\(module).\(name)" : name
    }

    private var modifier: String { access == .public ? "public " : "" }

    private mutating func line(_ text: String = "") {
        lines.append(text.isEmpty ? "" : indentation + text)
    }

    mutating func blankLine() { line() }

    private mutating func indented(_ body: (inout SwiftEmitter) -> Void) {
        let saved = indentation
        indentation += "    "
        body(&self)
        indentation = saved
    }

    private mutating func documentation(_ text: [String]) {
        for entry in text { line(entry.isEmpty ? "///" : "/// " + entry) }
    }

    mutating func type(_ use: TypeUse, inSignature: Bool = true) -> String {
        switch use {
        case .declared(let path): return path.joined(separator: ".")
        case .extensible(let path):
            return "\(library("Extensible", inSignature: inSignature))<\(path.joined(separator: "."))>"
        case .builtin(let builtin): return library(builtin.rawValue, inSignature: inSignature)
        case .array(let element): return "[\(type(element, inSignature: inSignature))]"
        case .dictionary(let value):
            return "[\(library("String", inSignature: inSignature)): \(type(value, inSignature: inSignature))]"
        case .optional(let wrapped): return type(wrapped, inSignature: inSignature) + "?"
        }
    }

    // MARK: - Declarations

    mutating func declare(_ plan: TypePlan) {
        documentation(plan.documentation)
        switch plan.kind {
        case .structure(let properties): structure(plan, properties)
        case .closedEnum(let cases): enumeration(plan, cases, protocolName: "ClosedEnum", caseIterable: true)
        case .extensibleEnum(let cases): enumeration(plan, cases, protocolName: "ExtensibleEnum", caseIterable: false)
        case .union(let discriminator, let variants): union(plan, discriminator: discriminator, variants: variants)
        case .kindUnion(let variants): kindUnion(plan, variants: variants)
        case .alias(let use): line("\(modifier)typealias \(plan.name) = \(type(use))")
        }
    }

    private mutating func conformances() -> String {
        ["Codable", "Hashable", "Sendable"].map { library($0, inSignature: true) }.joined(separator: ", ")
    }

    private mutating func structure(_ plan: TypePlan, _ properties: [PropertyPlan]) {
        line("\(modifier)struct \(plan.name): \(conformances()) {")
        indented { body in
            for property in properties {
                body.documentation(property.documentation)
                body.line(
                    "\(body.modifier)var \(SwiftNames.member(property.swiftName)): \(body.declaredType(property))")
            }
            if !properties.isEmpty { body.line() }
            let parameters = properties.map { property in
                "\(SwiftNames.member(property.swiftName)): \(body.declaredType(property))"
                    + (property.required ? "" : " = nil")
            }
            body.line("\(body.modifier)init(\(parameters.joined(separator: ", "))) {")
            body.indented { inner in
                for property in properties {
                    let name = SwiftNames.member(property.swiftName)
                    inner.line("self.\(name) = \(name)")
                }
            }
            body.line("}")
            for nested in plan.nested {
                body.line()
                body.declare(nested)
            }
            guard !properties.isEmpty else {
                // No members: still an object (`5` or `null` must not decode), written as `{}`. A key type
                // with no values, since an enum without cases cannot have a raw type.
                body.line()
                body.line("private struct CodingKeys: \(body.library("CodingKey", inSignature: false)) {")
                body.indented { inner in
                    inner.line("var stringValue: \(inner.library("String", inSignature: false))")
                    inner.line("var intValue: \(inner.library("Int", inSignature: false))? { nil }")
                    inner.line(
                        "init?(stringValue: \(inner.library("String", inSignature: false))) { self.stringValue = stringValue }"
                    )
                    inner.line("init?(intValue: \(inner.library("Int", inSignature: false))) { nil }")
                }
                body.line("}")
                body.line()
                body.line(
                    "\(body.modifier)init(from decoder: any \(body.library("Decoder", inSignature: true))) throws {")
                body.indented { $0.line("_ = try decoder.container(keyedBy: CodingKeys.self)") }
                body.line("}")
                body.line()
                body.line(
                    "\(body.modifier)func encode(to encoder: any \(body.library("Encoder", inSignature: true))) throws {"
                )
                body.indented { $0.line("_ = encoder.container(keyedBy: CodingKeys.self)") }
                body.line("}")
                return
            }
            body.line()
            body.line(
                "private enum CodingKeys: \(body.library("String", inSignature: false)), \(body.library("CodingKey", inSignature: false)) {"
            )
            body.indented { inner in
                for property in properties {
                    let name = SwiftNames.member(property.swiftName)
                    inner.line(
                        property.swiftName == property.wireName
                            ? "case \(name)" : "case \(name) = \(SwiftNames.literal(property.wireName))")
                }
            }
            body.line("}")
            body.line()
            body.line("\(body.modifier)init(from decoder: any \(body.library("Decoder", inSignature: true))) throws {")
            body.indented { inner in
                inner.line("let container = try decoder.container(keyedBy: CodingKeys.self)")
                for property in properties {
                    let name = SwiftNames.member(property.swiftName)
                    let type = inner.type(property.type, inSignature: false)
                    // JSONValue holds null itself: never `JSONValue?` for null.
                    let isJSON = property.type == .builtin(.json)
                    if !property.required, property.nullable || isJSON {
                        // Absent, null and a value are three states (`Nullable<T>?`, `JSONValue?`): decodeIfPresent
                        // would fold null into absent. `.some`/`.none`, not a bare nil: JSONValue is
                        // ExpressibleByNilLiteral, so nil would be `.null`.
                        let decoded = isJSON ? type : "\(inner.library("Nullable", inSignature: false))<\(type)>"
                        inner.line(
                            "self.\(name) = container.contains(.\(name)) ? .some(try container.decode(\(decoded).self, forKey: .\(name))) : .none"
                        )
                        if let marker = property.marker, !isJSON {
                            // A marker holds its one value, or null, or is absent.
                            inner.line("if case .value(let value)? = self.\(name), value != \(marker) {")
                            inner.indented {
                                $0.line(
                                    "throw \($0.library("undeclaredMarkerValue", inSignature: false))(value, of: \(SwiftNames.literal(plan.path.joined(separator: ".") + "." + property.wireName)), codingPath: container.codingPath + [CodingKeys.\(name)])"
                                )
                            }
                            inner.line("}")
                        }
                        continue
                    }
                    // Required and nullable: the member must be present, null allowed.
                    let call =
                        !property.required
                        ? "decodeIfPresent(\(type).self"
                        : property.nullable && !isJSON ? "decode(\(type)?.self" : "decode(\(type).self"
                    inner.line("self.\(name) = try container.\(call), forKey: .\(name))")
                    if let marker = property.marker {
                        // A marker holds its one value (or is absent when optional, null when nullable).
                        let held = property.required && !property.nullable ? "self.\(name)" : "value"
                        inner.line(
                            held == "value"
                                ? "if let value = self.\(name), value != \(marker) {" : "if \(held) != \(marker) {")
                        inner.indented {
                            $0.line(
                                "throw \($0.library("undeclaredMarkerValue", inSignature: false))(\(held), of: \(SwiftNames.literal(plan.path.joined(separator: ".") + "." + property.wireName)), codingPath: container.codingPath + [CodingKeys.\(name)])"
                            )
                        }
                        inner.line("}")
                    }
                }
            }
            body.line("}")
            body.line()
            body.line(
                "\(body.modifier)func encode(to encoder: any \(body.library("Encoder", inSignature: true))) throws {")
            body.indented { inner in
                inner.line("var container = encoder.container(keyedBy: CodingKeys.self)")
                for property in properties {
                    let name = SwiftNames.member(property.swiftName)
                    // Required and nullable: write null rather than leave the member out. `self.`: a member
                    // may be called `container` or `encoder`.
                    inner.line(
                        "try container.\(property.required ? "encode" : "encodeIfPresent")(self.\(name), forKey: .\(name))"
                    )
                }
            }
            body.line("}")
        }
        line("}")
    }

    private mutating func declaredType(_ property: PropertyPlan) -> String {
        // JSONValue holds null itself
        if property.type == .builtin(.json) { return type(property.type) + (property.required ? "" : "?") }
        if !property.required, property.nullable {
            return "\(library("Nullable", inSignature: true))<\(type(property.type))>?"
        }
        return type(property.type) + (property.required && !property.nullable ? "" : "?")
    }

    private mutating func enumeration(
        _ plan: TypePlan, _ cases: [EnumCasePlan], protocolName: String, caseIterable: Bool
    ) {
        let integer = cases.first?.integer == true
        let conformances =
            [
                library(integer ? "Int" : "String", inSignature: true),
                library(integer ? "ClosedIntegerEnum" : protocolName, inSignature: true),
            ]
            + (caseIterable ? [library("CaseIterable", inSignature: true)] : [])
        line("\(modifier)enum \(plan.name): \(conformances.joined(separator: ", ")) {")
        indented { body in
            for entry in cases {
                let name = SwiftNames.member(entry.swiftName)
                if entry.integer {
                    body.line("case \(name) = \(entry.rawValue)")
                    continue
                }
                body.line(
                    entry.swiftName == entry.rawValue
                        ? "case \(name)" : "case \(name) = \(SwiftNames.literal(entry.rawValue))")
            }
        }
        line("}")
    }

    private mutating func union(_ plan: TypePlan, discriminator: String, variants: [VariantPlan]) {
        // `indirect`: a variant may refer back to the union (a tree), which a value type cannot hold directly.
        line("\(modifier)indirect enum \(plan.name): \(conformances()) {")
        indented { body in
            for variant in variants {
                body.line("case \(SwiftNames.member(variant.swiftName))(\(body.type(variant.type)))")
            }
            body.line()
            body.line(
                "private enum DiscriminatorKey: \(body.library("String", inSignature: false)), \(body.library("CodingKey", inSignature: false)) {"
            )
            body.indented { $0.line("case discriminator = \(SwiftNames.literal(discriminator))") }
            body.line("}")
            body.line()
            body.line("\(body.modifier)init(from decoder: any \(body.library("Decoder", inSignature: true))) throws {")
            body.indented { inner in
                inner.line("let container = try decoder.container(keyedBy: DiscriminatorKey.self)")
                inner.line(
                    "let value = try container.decode(\(inner.library("String", inSignature: false)).self, forKey: .discriminator)"
                )
                // By bytes, as closed enums match: Swift's `==` would take `O\u{212A}` (a Kelvin sign) for `OK`.
                // Compared in place (no array per value).
                inner.line("let bytes = value.utf8")
                for (index, variant) in variants.enumerated() {
                    let condition = variant.values.map { "bytes.elementsEqual(\(SwiftNames.literal($0)).utf8)" }
                        .joined(separator: " || ")
                    inner.line("\(index == 0 ? "if" : "} else if") \(condition) {")
                    inner.indented {
                        $0.line(
                            "self = .\(SwiftNames.member(variant.swiftName))(try \($0.type(variant.type, inSignature: false))(from: decoder))"
                        )
                    }
                }
                inner.line(variants.isEmpty ? "do {" : "} else {")
                inner.indented { cases in
                    // Like a closed enum: ContractDecoder reports undeclaredEnumValue at the discriminator's path.
                    cases.line(
                        "let problem = \(cases.library("UndeclaredEnumValue", inSignature: false))(typeName: \(SwiftNames.literal(plan.path.joined(separator: "."))), value: value)"
                    )
                    cases.line("throw \(cases.library("DecodingError", inSignature: false)).dataCorrupted(")
                    cases.indented {
                        $0.line(
                            ".init(codingPath: container.codingPath + [DiscriminatorKey.discriminator], debugDescription: problem.description, underlyingError: problem)"
                        )
                    }
                    cases.line(")")
                }
                inner.line("}")
            }
            body.line("}")
            body.line()
            body.encodeVariants(variants.map(\.swiftName))
        }
        line("}")
    }

    private mutating func kindUnion(_ plan: TypePlan, variants: [KindVariantPlan]) {
        // `indirect`: a variant may refer back to the union (a tree), which a value type cannot hold directly.
        line("\(modifier)indirect enum \(plan.name): \(conformances()) {")
        indented { body in
            for variant in variants {
                body.line("case \(SwiftNames.member(variant.swiftName))(\(body.type(variant.type)))")
            }
            body.line()
            body.line("\(body.modifier)init(from decoder: any \(body.library("Decoder", inSignature: true))) throws {")
            body.indented { inner in
                let kindType = inner.library("JSONKind", inSignature: false)
                // The kind first, then the one variant of that kind: no variant is tried and thrown away.
                inner.line("let kind = try \(kindType)(of: decoder)")
                inner.line("switch kind {")
                for kind in JSONKind.allCases {
                    let same = variants.filter { $0.kind == kind }
                    guard !same.isEmpty else { continue }
                    inner.line("case .\(kind.rawValue):")
                    inner.indented { cases in
                        if same.count == 1 {
                            cases.line(cases.decodeVariant(same[0]))
                            return
                        }
                        // Objects: the members only one variant requires select it.
                        let names = same.flatMap(\.required).map(SwiftNames.literal).joined(separator: ", ")
                        cases.line("let present = try \(kindType).members([\(names)], presentIn: decoder)")
                        for (index, variant) in same.enumerated() {
                            let condition = variant.required.map { "present.contains(\(SwiftNames.literal($0)))" }
                                .joined(separator: " && ")
                            cases.line("\(index == 0 ? "if" : "} else if") \(condition) {")
                            cases.indented { $0.line($0.decodeVariant(variant)) }
                        }
                        cases.line("} else {")
                        cases.indented {
                            $0.line(
                                "throw \($0.library("DecodingError", inSignature: false)).dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: \(SwiftNames.literal("an object with none of the required members of " + plan.path.joined(separator: ".") + "'s variants"))))"
                            )
                        }
                        cases.line("}")
                    }
                }
                let expected = JSONKind.allCases.filter { kind in variants.contains { $0.kind == kind } }
                    .map { "." + $0.rawValue }.joined(separator: ", ")
                inner.line("default:")
                inner.indented {
                    $0.line(
                        "throw \(kindType).mismatch(kind, expected: [\(expected)], in: \(plan.name).self, decoder: decoder)"
                    )
                }
                inner.line("}")
            }
            body.line("}")
            body.line()
            body.encodeVariants(variants.map(\.swiftName))
            for nested in plan.nested {
                body.line()
                body.declare(nested)
            }
        }
        line("}")
    }

    /// Through the decoder's single-value container, not `T(from:)`: a decoder reads its special types
    /// (`Date` from RFC 3339 text, `Decimal` from the number's digits) only when asked for them by type;
    /// `Date(from:)` itself would read a number of seconds and `Decimal(from:)` an object.
    private mutating func decodeVariant(_ variant: KindVariantPlan) -> String {
        "self = .\(SwiftNames.member(variant.swiftName))(try decoder.singleValueContainer().decode(\(type(variant.type, inSignature: false)).self))"
    }

    /// `encode(to:)` of an enum whose cases each hold one value: the value, as it is — through the
    /// encoder's single-value container, so that a `Date` or `Decimal` is written the encoder's way
    /// (`value.encode(to:)` would write a date as seconds and a decimal as an object).
    private mutating func encodeVariants(_ names: [String]) {
        line("\(modifier)func encode(to encoder: any \(library("Encoder", inSignature: true))) throws {")
        indented { inner in
            inner.line("var container = encoder.singleValueContainer()")
            inner.line("switch self {")
            for name in names {
                inner.line("case .\(SwiftNames.member(name))(let value): try container.encode(value)")
            }
            inner.line("}")
        }
        line("}")
    }
}
