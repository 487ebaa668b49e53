import Foundation
import KeelContract

/// A compiled regular expression shared between validations.
final class NSRegularExpressionBox: @unchecked Sendable {
    // @unchecked Sendable: NSRegularExpression is immutable after creation and documented thread-safe.
    let regex: NSRegularExpression?
    init(_ pattern: String) { regex = try? NSRegularExpression(pattern: pattern) }

    func matches(_ string: String) -> Bool {
        guard let regex else { return false }
        return regex.firstMatch(in: string, range: NSRange(string.startIndex..., in: string)) != nil
    }
}

/// Walks one instance through a compiled schema (draft 2020-12 evaluation, with annotations for the
/// unevaluated* keywords).
struct Evaluator {
    let registry: SchemaRegistry
    let options: ValidationOptions
    let vocabularies: Vocabularies
    /// Resource URIs entered so far, outermost first: the dynamic scope for `$dynamicRef`.
    private var dynamicScope: [String] = []
    /// (schema location, instance location) pairs of references being followed, to stop cycles.
    private var activeReferences: Set<String> = []
    private var depth = 0
    private static let maximumDepth = 2000

    /// Whether evaluated properties and items are recorded: only when some schema reads them (an
    /// `unevaluated*` keyword with its vocabulary on); otherwise the sets would be built for nothing.
    let collectsAnnotations: Bool

    init(registry: SchemaRegistry, options: ValidationOptions, vocabularies: Vocabularies) {
        self.registry = registry
        self.options = options
        self.vocabularies = vocabularies
        self.collectsAnnotations = vocabularies.unevaluated && registry.usesUnevaluated
    }

    /// What evaluating one schema against one instance found.
    struct Outcome {
        var errors: [ValidationError] = []
        /// Property names evaluated successfully (for unevaluatedProperties).
        var evaluatedProperties: Set<String> = []
        /// Whether every item was evaluated, or which indices were (for unevaluatedItems).
        var evaluatedAllItems = false
        var evaluatedItems: Set<Int> = []

        var isValid: Bool { errors.isEmpty }

        /// Takes `other`'s annotations (only call when `other` is valid).
        mutating func absorbAnnotations(of other: Outcome) {
            evaluatedProperties.formUnion(other.evaluatedProperties)
            evaluatedAllItems = evaluatedAllItems || other.evaluatedAllItems
            evaluatedItems.formUnion(other.evaluatedItems)
        }

        mutating func fail(_ instancePath: String, _ keywordPath: String, _ message: String) {
            errors.append(
                ValidationError(instanceLocation: instancePath, keywordLocation: keywordPath, message: message))
        }
    }

    mutating func evaluate(_ node: SchemaNode, _ instance: JSONValue, instancePath: String, keywordPath: String)
        -> Outcome
    {
        var outcome = Outcome()
        switch node.value {
        case .bool(true):
            return outcome
        case .bool(false):
            outcome.fail(instancePath, keywordPath, "no value is allowed here (false schema)")
            return outcome
        case .object(let schema):
            depth += 1
            defer { depth -= 1 }
            guard depth <= Self.maximumDepth else {
                outcome.fail(
                    instancePath, keywordPath, "schema evaluation nested deeper than \(Self.maximumDepth) levels")
                return outcome
            }
            let base = node.base
            let resource = base.description
            let entersResource = dynamicScope.last != resource
            if entersResource { dynamicScope.append(resource) }
            defer { if entersResource { dynamicScope.removeLast() } }
            evaluateKeywords(schema, node: node, instance, instancePath, keywordPath, &outcome)
            return outcome
        default:
            // Not reachable through a valid schema; treat as "anything goes" rather than crash.
            return outcome
        }
    }

    // MARK: - Keywords

    private mutating func evaluateKeywords(
        _ schema: JSONObject, node: SchemaNode, _ instance: JSONValue, _ instancePath: String, _ keywordPath: String,
        _ outcome: inout Outcome
    ) {
        let base = node.base
        if case .string(let reference) = schema["$ref"] ?? .null {
            followReference(
                reference, dynamic: false, base: base, target: registry.referenceTargets[node.location + "/$ref"],
                instance, instancePath, keywordPath + "/$ref", &outcome)
        }
        if case .string(let reference) = schema["$dynamicRef"] ?? .null {
            followReference(
                reference, dynamic: true, base: base, target: registry.referenceTargets[node.location + "/$dynamicRef"],
                instance, instancePath, keywordPath + "/$dynamicRef", &outcome)
        }
        if vocabularies.applicator {
            applyInPlaceApplicators(schema, base: base, instance, instancePath, keywordPath, &outcome)
            switch instance {
            case .object(let object):
                applyObjectApplicators(schema, base: base, object, instancePath, keywordPath, &outcome)
            case .array(let array):
                applyArrayApplicators(schema, base: base, array, instancePath, keywordPath, &outcome)
            default: break
            }
        }
        if vocabularies.validation {
            validateAssertions(schema, instance, instancePath, keywordPath, &outcome)
        }
        if case .string(let format) = schema["format"] ?? .null, case .string(let value) = instance,
            options.formatAssertion || vocabularies.formatAssertion,
            FormatChecker.check(format, value) == false
        {
            outcome.fail(instancePath, keywordPath + "/format", "not a valid \(format)")
        }
        if vocabularies.unevaluated {
            applyUnevaluated(schema, base: base, instance, instancePath, keywordPath, &outcome)
        }
    }

    /// Evaluates the target of `reference`: `target` when compilation resolved it already (the usual case),
    /// otherwise resolved now.
    private mutating func followReference(
        _ reference: String, dynamic: Bool, base: URIReference, target resolved: SchemaNode?, _ instance: JSONValue,
        _ instancePath: String, _ keywordPath: String, _ outcome: inout Outcome
    ) {
        guard var target = resolved ?? (try? registry.node(for: reference, from: base)) else {
            // References were all resolved when the schema was compiled; this cannot happen.
            outcome.fail(instancePath, keywordPath, "unresolvable reference \(reference)")
            return
        }
        if dynamic {
            let resolved = base.resolving(reference)
            let fragment = resolved.fragment ?? ""
            // Only a dynamic anchor "bookended" by a $dynamicAnchor at the initial target goes dynamic.
            if !fragment.isEmpty, !fragment.hasPrefix("/"),
                registry.hasDynamicAnchor(resolved.withoutFragment.description, fragment)
            {
                for resource in dynamicScope where registry.hasDynamicAnchor(resource, fragment) {
                    if let dynamicTarget = try? registry.node(for: "#" + fragment, from: URIReference(resource)) {
                        target = dynamicTarget
                        break
                    }
                }
            }
        }
        let key = target.location + "@" + instancePath
        guard !activeReferences.contains(key) else {
            outcome.fail(instancePath, keywordPath, "circular reference \(reference) never reaches a decision")
            return
        }
        activeReferences.insert(key)
        defer { activeReferences.remove(key) }
        let result = evaluate(target, instance, instancePath: instancePath, keywordPath: keywordPath)
        if result.isValid { outcome.absorbAnnotations(of: result) } else { outcome.errors += result.errors }
    }

    private func child(_ value: JSONValue, of base: URIReference, at location: String) -> SchemaNode {
        SchemaNode(value: value, outerBase: base, location: location)
    }

    private mutating func applyInPlaceApplicators(
        _ schema: JSONObject, base: URIReference, _ instance: JSONValue, _ instancePath: String, _ keywordPath: String,
        _ outcome: inout Outcome
    ) {
        if case .array(let subschemas) = schema["allOf"] ?? .null {
            for (index, subschema) in subschemas.enumerated() {
                let path = keywordPath + "/allOf/\(index)"
                let result = evaluate(
                    child(subschema, of: base, at: path), instance, instancePath: instancePath, keywordPath: path)
                if result.isValid { outcome.absorbAnnotations(of: result) } else { outcome.errors += result.errors }
            }
        }
        if case .array(let subschemas) = schema["anyOf"] ?? .null {
            var matched = false
            var branchErrors: [ValidationError] = []
            for (index, subschema) in subschemas.enumerated() {
                let path = keywordPath + "/anyOf/\(index)"
                let result = evaluate(
                    child(subschema, of: base, at: path), instance, instancePath: instancePath, keywordPath: path)
                if result.isValid {
                    matched = true
                    outcome.absorbAnnotations(of: result)
                } else {
                    branchErrors += result.errors
                }
            }
            if !matched {
                outcome.fail(
                    instancePath, keywordPath + "/anyOf", "does not match any of the \(subschemas.count) alternatives")
                outcome.errors += branchErrors
            }
        }
        if case .array(let subschemas) = schema["oneOf"] ?? .null {
            var matches: [Int] = []
            var branchErrors: [ValidationError] = []
            var annotations = Outcome()
            for (index, subschema) in subschemas.enumerated() {
                let path = keywordPath + "/oneOf/\(index)"
                let result = evaluate(
                    child(subschema, of: base, at: path), instance, instancePath: instancePath, keywordPath: path)
                if result.isValid {
                    matches.append(index)
                    annotations.absorbAnnotations(of: result)
                } else {
                    branchErrors += result.errors
                }
            }
            if matches.count == 1 {
                outcome.absorbAnnotations(of: annotations)
            } else if matches.isEmpty {
                outcome.fail(
                    instancePath, keywordPath + "/oneOf", "does not match any of the \(subschemas.count) alternatives")
                outcome.errors += branchErrors
            } else {
                outcome.fail(
                    instancePath, keywordPath + "/oneOf",
                    "matches alternatives \(matches.map(String.init).joined(separator: " and ")); exactly one must match"
                )
            }
        }
        if let subschema = schema["not"] {
            let path = keywordPath + "/not"
            let result = evaluate(
                child(subschema, of: base, at: path), instance, instancePath: instancePath, keywordPath: path)
            if result.isValid { outcome.fail(instancePath, path, "must not match the schema under \"not\"") }
        }
        if let condition = schema["if"] {
            let path = keywordPath + "/if"
            let result = evaluate(
                child(condition, of: base, at: path), instance, instancePath: instancePath, keywordPath: path)
            let branchKeyword = result.isValid ? "then" : "else"
            if result.isValid { outcome.absorbAnnotations(of: result) }
            if let branch = schema[branchKeyword] {
                let branchPath = keywordPath + "/" + branchKeyword
                let branchResult = evaluate(
                    child(branch, of: base, at: branchPath), instance, instancePath: instancePath,
                    keywordPath: branchPath)
                if branchResult.isValid {
                    outcome.absorbAnnotations(of: branchResult)
                } else {
                    outcome.errors += branchResult.errors
                }
            }
        }
        if case .object(let object) = instance, case .object(let dependencies) = schema["dependencies"] ?? .null {
            // Draft 7 `dependencies` (array → dependentRequired, schema → dependentSchemas), kept for old documents.
            for (property, dependency) in dependencies where object[property] != nil {
                let path = keywordPath + "/dependencies/" + JSONPointer.escape(property)
                if case .array(let names) = dependency {
                    for case .string(let name) in names where object[name] == nil {
                        outcome.fail(
                            instancePath, path,
                            "property \(name.debugDescription) is required when \(property.debugDescription) is present"
                        )
                    }
                } else {
                    let result = evaluate(
                        child(dependency, of: base, at: path), instance, instancePath: instancePath, keywordPath: path)
                    if result.isValid { outcome.absorbAnnotations(of: result) } else { outcome.errors += result.errors }
                }
            }
        }
        if case .object(let object) = instance, case .object(let dependents) = schema["dependentSchemas"] ?? .null {
            for (property, subschema) in dependents where object[property] != nil {
                let path = keywordPath + "/dependentSchemas/" + JSONPointer.escape(property)
                let result = evaluate(
                    child(subschema, of: base, at: path), instance, instancePath: instancePath, keywordPath: path)
                if result.isValid { outcome.absorbAnnotations(of: result) } else { outcome.errors += result.errors }
            }
        }
    }

    /// A property's subschema result: its errors, or (when annotations are collected) the property as
    /// evaluated.
    private func record(_ result: Outcome, forProperty name: String, in outcome: inout Outcome) {
        if result.isValid {
            if collectsAnnotations { outcome.evaluatedProperties.insert(name) }
        } else {
            outcome.errors += result.errors
        }
    }

    private mutating func applyObjectApplicators(
        _ schema: JSONObject, base: URIReference, _ object: JSONObject, _ instancePath: String, _ keywordPath: String,
        _ outcome: inout Outcome
    ) {
        var matchedByProperties: Set<String> = []
        if case .object(let properties) = schema["properties"] ?? .null {
            for (name, subschema) in properties {
                guard let value = object[name] else { continue }
                matchedByProperties.insert(name)
                let path = keywordPath + "/properties/" + JSONPointer.escape(name)
                let result = evaluate(
                    child(subschema, of: base, at: path), value,
                    instancePath: instancePath + "/" + JSONPointer.escape(name), keywordPath: path)
                record(result, forProperty: name, in: &outcome)
            }
        }
        if case .object(let patterns) = schema["patternProperties"] ?? .null {
            for (pattern, subschema) in patterns {
                let regex = self.regex(pattern)
                let path = keywordPath + "/patternProperties/" + JSONPointer.escape(pattern)
                for (name, value) in object where regex.matches(name) {
                    matchedByProperties.insert(name)
                    let result = evaluate(
                        child(subschema, of: base, at: path), value,
                        instancePath: instancePath + "/" + JSONPointer.escape(name), keywordPath: path)
                    record(result, forProperty: name, in: &outcome)
                }
            }
        }
        if let additional = schema["additionalProperties"] {
            let path = keywordPath + "/additionalProperties"
            for (name, value) in object where !matchedByProperties.contains(name) {
                let result = evaluate(
                    child(additional, of: base, at: path), value,
                    instancePath: instancePath + "/" + JSONPointer.escape(name), keywordPath: path)
                if result.isValid {
                    if collectsAnnotations { outcome.evaluatedProperties.insert(name) }
                } else if case .bool(false) = additional {
                    outcome.fail(
                        instancePath + "/" + JSONPointer.escape(name), path,
                        "property \(name.debugDescription) is not allowed")
                } else {
                    outcome.errors += result.errors
                }
            }
        }
        if let names = schema["propertyNames"] {
            let path = keywordPath + "/propertyNames"
            for (name, _) in object {
                let result = evaluate(
                    child(names, of: base, at: path), .string(name),
                    instancePath: instancePath + "/" + JSONPointer.escape(name), keywordPath: path)
                if !result.isValid {
                    outcome.fail(instancePath, path, "property name \(name.debugDescription) is not allowed")
                }
            }
        }
    }

    private mutating func applyArrayApplicators(
        _ schema: JSONObject, base: URIReference, _ array: [JSONValue], _ instancePath: String, _ keywordPath: String,
        _ outcome: inout Outcome
    ) {
        var prefixCount = 0
        if case .array(let prefix) = schema["prefixItems"] ?? .null {
            for (index, subschema) in prefix.enumerated() where index < array.count {
                let path = keywordPath + "/prefixItems/\(index)"
                let result = evaluate(
                    child(subschema, of: base, at: path), array[index], instancePath: instancePath + "/\(index)",
                    keywordPath: path)
                if result.isValid {
                    if collectsAnnotations { outcome.evaluatedItems.insert(index) }
                } else {
                    outcome.errors += result.errors
                }
            }
            prefixCount = prefix.count
        }
        if let items = schema["items"] {
            let path = keywordPath + "/items"
            var allValid = true
            for index in array.indices where index >= prefixCount {
                let result = evaluate(
                    child(items, of: base, at: path), array[index], instancePath: instancePath + "/\(index)",
                    keywordPath: path)
                if !result.isValid {
                    allValid = false
                    if case .bool(false) = items {
                        outcome.fail(instancePath + "/\(index)", path, "no item is allowed at index \(index)")
                    } else {
                        outcome.errors += result.errors
                    }
                }
            }
            if allValid { outcome.evaluatedAllItems = true }
        }
        if let contains = schema["contains"] {
            let path = keywordPath + "/contains"
            var matches: Set<Int> = []
            for index in array.indices {
                let result = evaluate(
                    child(contains, of: base, at: path), array[index], instancePath: instancePath + "/\(index)",
                    keywordPath: path)
                if result.isValid { matches.insert(index) }
            }
            outcome.evaluatedItems.formUnion(matches)
            let minimum = vocabularies.validation ? (schema["minContains"].flatMap(Self.nonNegativeInteger) ?? 1) : 1
            if matches.count < minimum {
                outcome.fail(
                    instancePath, minimum == 1 && schema["minContains"] == nil ? path : keywordPath + "/minContains",
                    "must contain at least \(minimum) matching item(s), found \(matches.count)")
            }
            if vocabularies.validation, let maximum = schema["maxContains"].flatMap(Self.nonNegativeInteger),
                matches.count > maximum
            {
                outcome.fail(
                    instancePath, keywordPath + "/maxContains",
                    "must contain at most \(maximum) matching item(s), found \(matches.count)")
            }
        }
    }

    private mutating func applyUnevaluated(
        _ schema: JSONObject, base: URIReference, _ instance: JSONValue, _ instancePath: String, _ keywordPath: String,
        _ outcome: inout Outcome
    ) {
        if let unevaluated = schema["unevaluatedItems"], case .array(let array) = instance, !outcome.evaluatedAllItems {
            let path = keywordPath + "/unevaluatedItems"
            var allValid = true
            for index in array.indices where !outcome.evaluatedItems.contains(index) {
                let result = evaluate(
                    child(unevaluated, of: base, at: path), array[index], instancePath: instancePath + "/\(index)",
                    keywordPath: path)
                if !result.isValid {
                    allValid = false
                    outcome.fail(instancePath + "/\(index)", path, "item \(index) is not allowed (unevaluated)")
                }
            }
            if allValid { outcome.evaluatedAllItems = true }
        }
        if let unevaluated = schema["unevaluatedProperties"], case .object(let object) = instance {
            let path = keywordPath + "/unevaluatedProperties"
            for (name, value) in object where !outcome.evaluatedProperties.contains(name) {
                let result = evaluate(
                    child(unevaluated, of: base, at: path), value,
                    instancePath: instancePath + "/" + JSONPointer.escape(name), keywordPath: path)
                if result.isValid {
                    outcome.evaluatedProperties.insert(name)
                } else {
                    outcome.fail(
                        instancePath + "/" + JSONPointer.escape(name), path,
                        "property \(name.debugDescription) is not allowed (unevaluated)")
                }
            }
        }
    }

    // MARK: - Assertions (validation vocabulary)

    private func validateAssertions(
        _ schema: JSONObject, _ instance: JSONValue, _ instancePath: String, _ keywordPath: String,
        _ outcome: inout Outcome
    ) {
        if let type = schema["type"] {
            let allowed: [String]
            switch type {
            case .string(let name): allowed = [name]
            case .array(let names): allowed = names.compactMap(\.stringValue)
            default: allowed = []
            }
            let nullableAllowsNull = options.openAPINullable && instance == .null && schema["nullable"] == .bool(true)
            if !allowed.contains(where: { Self.matches(instance, type: $0) }) && !nullableAllowsNull {
                outcome.fail(
                    instancePath, keywordPath + "/type",
                    "expected \(allowed.joined(separator: " or ")), found \(Self.typeName(of: instance))")
            }
        }
        if let constant = schema["const"], constant != instance {
            outcome.fail(instancePath, keywordPath + "/const", "must equal \(Self.excerpt(constant))")
        }
        if case .array(let values) = schema["enum"] ?? .null, !values.contains(instance) {
            outcome.fail(instancePath, keywordPath + "/enum", "must be one of \(Self.excerpt(.array(values)))")
        }
        switch instance {
        case .number(let number): validateNumber(number, schema, instancePath, keywordPath, &outcome)
        case .string(let string): validateString(string, schema, instancePath, keywordPath, &outcome)
        case .array(let array): validateArray(array, schema, instancePath, keywordPath, &outcome)
        case .object(let object): validateObject(object, schema, instancePath, keywordPath, &outcome)
        default: break
        }
    }

    private func validateNumber(
        _ number: JSONNumber, _ schema: JSONObject, _ instancePath: String, _ keywordPath: String,
        _ outcome: inout Outcome
    ) {
        if case .number(let divisor) = schema["multipleOf"] ?? .null, divisor > JSONNumber(Int64(0)),
            !number.isMultiple(of: divisor)
        {
            outcome.fail(instancePath, keywordPath + "/multipleOf", "must be a multiple of \(divisor)")
        }
        if case .number(let limit) = schema["maximum"] ?? .null, number > limit {
            outcome.fail(instancePath, keywordPath + "/maximum", "must be at most \(limit)")
        }
        if case .number(let limit) = schema["exclusiveMaximum"] ?? .null, number >= limit {
            outcome.fail(instancePath, keywordPath + "/exclusiveMaximum", "must be less than \(limit)")
        }
        if case .number(let limit) = schema["minimum"] ?? .null, number < limit {
            outcome.fail(instancePath, keywordPath + "/minimum", "must be at least \(limit)")
        }
        if case .number(let limit) = schema["exclusiveMinimum"] ?? .null, number <= limit {
            outcome.fail(instancePath, keywordPath + "/exclusiveMinimum", "must be greater than \(limit)")
        }
    }

    private func validateString(
        _ string: String, _ schema: JSONObject, _ instancePath: String, _ keywordPath: String, _ outcome: inout Outcome
    ) {
        // Lengths count Unicode code points, as the specification says (not grapheme clusters).
        let length = string.unicodeScalars.count
        if let limit = schema["maxLength"].flatMap(Self.nonNegativeInteger), length > limit {
            outcome.fail(
                instancePath, keywordPath + "/maxLength", "must be at most \(limit) characters long, is \(length)")
        }
        if let limit = schema["minLength"].flatMap(Self.nonNegativeInteger), length < limit {
            outcome.fail(
                instancePath, keywordPath + "/minLength", "must be at least \(limit) characters long, is \(length)")
        }
        if case .string(let pattern) = schema["pattern"] ?? .null, !regex(pattern).matches(string) {
            outcome.fail(instancePath, keywordPath + "/pattern", "must match the pattern \(pattern.debugDescription)")
        }
    }

    private func validateArray(
        _ array: [JSONValue], _ schema: JSONObject, _ instancePath: String, _ keywordPath: String,
        _ outcome: inout Outcome
    ) {
        if let limit = schema["maxItems"].flatMap(Self.nonNegativeInteger), array.count > limit {
            outcome.fail(
                instancePath, keywordPath + "/maxItems", "must have at most \(limit) items, has \(array.count)")
        }
        if let limit = schema["minItems"].flatMap(Self.nonNegativeInteger), array.count < limit {
            outcome.fail(
                instancePath, keywordPath + "/minItems", "must have at least \(limit) items, has \(array.count)")
        }
        if schema["uniqueItems"] == .bool(true) {
            var seen: [JSONValue: Int] = [:]
            for (index, element) in array.enumerated() {
                if let first = seen[element] {
                    outcome.fail(
                        instancePath, keywordPath + "/uniqueItems",
                        "items \(first) and \(index) are equal; items must be unique")
                    break
                }
                seen[element] = index
            }
        }
    }

    private func validateObject(
        _ object: JSONObject, _ schema: JSONObject, _ instancePath: String, _ keywordPath: String,
        _ outcome: inout Outcome
    ) {
        if let limit = schema["maxProperties"].flatMap(Self.nonNegativeInteger), object.count > limit {
            outcome.fail(
                instancePath, keywordPath + "/maxProperties",
                "must have at most \(limit) properties, has \(object.count)")
        }
        if let limit = schema["minProperties"].flatMap(Self.nonNegativeInteger), object.count < limit {
            outcome.fail(
                instancePath, keywordPath + "/minProperties",
                "must have at least \(limit) properties, has \(object.count)")
        }
        if case .array(let required) = schema["required"] ?? .null {
            for case .string(let name) in required where object[name] == nil {
                outcome.fail(
                    instancePath, keywordPath + "/required", "missing required property \(name.debugDescription)")
            }
        }
        if case .object(let dependencies) = schema["dependentRequired"] ?? .null {
            for (property, requirement) in dependencies where object[property] != nil {
                guard case .array(let names) = requirement else { continue }
                for case .string(let name) in names where object[name] == nil {
                    outcome.fail(
                        instancePath, keywordPath + "/dependentRequired/" + JSONPointer.escape(property),
                        "property \(name.debugDescription) is required when \(property.debugDescription) is present")
                }
            }
        }
    }

    // MARK: - Helpers

    private func regex(_ pattern: String) -> NSRegularExpressionBox { registry.regex(for: pattern) }

    private static func matches(_ instance: JSONValue, type: String) -> Bool {
        switch (type, instance) {
        case ("null", .null), ("boolean", .bool), ("string", .string), ("array", .array), ("object", .object),
            ("number", .number):
            return true
        case ("integer", .number(let number)):
            return number.isInteger
        default:
            return false
        }
    }

    private static func typeName(of instance: JSONValue) -> String {
        if case .number(let number) = instance, number.isInteger { return "integer" }
        return instance.kind
    }

    private static func nonNegativeInteger(_ value: JSONValue) -> Int? {
        guard case .number(let number) = value, let integer = number.int64, integer >= 0 else { return nil }
        return Int(clamping: integer)
    }

    /// At most 60 characters of a value's JSON, for messages.
    static func excerpt(_ value: JSONValue) -> String {
        let text = value.description
        return text.count > 60 ? String(text.prefix(57)) + "..." : text
    }
}

/// Rewrites the ECMA-262 constructs whose meaning differs in ICU (the engine behind NSRegularExpression).
enum ECMAScriptPattern {
    /// ECMA-262 WhiteSpace and LineTerminator code points (ICU's \\s lacks U+FEFF).
    private static let whitespace = "\\t\\n\\x{0B}\\f\\r \\x{A0}\\x{FEFF}\\p{Zs}\\x{2028}\\x{2029}"

    static func translate(_ pattern: String) -> String {
        // ECMA-262 \d, \w and \s are ASCII/explicit classes; ICU's are Unicode-wide.
        var result = ""
        var iterator = pattern.makeIterator()
        var inClass = false
        while let character = iterator.next() {
            if character == "\\", let next = iterator.next() {
                switch next {
                case "s": result += inClass ? whitespace : "[" + whitespace + "]"
                case "S": result += inClass ? "\\S" : "[^" + whitespace + "]"
                case "d": result += inClass ? "0-9" : "[0-9]"
                case "D": result += inClass ? "\\D" : "[^0-9]"
                case "w": result += inClass ? "a-zA-Z0-9_" : "[a-zA-Z0-9_]"
                case "W": result += inClass ? "\\W" : "[^a-zA-Z0-9_]"
                default: result += "\\" + String(next)
                }
                continue
            }
            if character == "[" { inClass = true }
            if character == "]" { inClass = false }
            result.append(character)
        }
        return result
    }
}
