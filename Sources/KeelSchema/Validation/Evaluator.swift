import Foundation
import KeelContract
import KeelCore

/// Walks one instance through a compiled schema (draft 2020-12 evaluation, with annotations for the
/// `unevaluated*` keywords only when some schema reads them).
///
/// Errors go to one shared list; a branch whose errors are dropped (`anyOf` with a match, `not`, `if`)
/// truncates the list back. Locations are kept as stacks of segments and joined into JSON pointers only
/// when an error is reported, so a valid instance costs no string building at all.
struct Evaluator {
    private let program: CompiledProgram
    private let options: ValidationOptions
    private let formatAsserts: Bool
    private let collectsAnnotations: Bool
    private(set) var errors: [ValidationError] = []
    /// Why the evaluation stopped without an answer (nested too deep, too much work): then no answer holds —
    /// least of all one a `not` or an `if` would make of a branch that only stopped.
    private(set) var undecided: String?
    /// Schema nodes evaluated so far, against ``budget``.
    private var steps = 0
    /// How many nodes an evaluation may take: a million plus a thousand per value of the instance — far
    /// beyond any real schema and document (each value checked against a few hundred schemas), and far below
    /// what a schema whose references fan out (each definition referring twice to the next) would take for a
    /// tiny instance. The instance is counted only when the first million is spent (``uncounted``): most
    /// validations never pay for the count.
    private var budget = Self.baseBudget
    private static let baseBudget = 1_000_000
    /// The instance, until it is counted.
    private var uncounted: JSONValue?
    /// The instance location, one step per level.
    private var instancePath: [InstanceStep] = []
    /// The keyword location (through references), one segment per edge followed.
    private var keywordPath: [String] = []
    /// Resources entered so far, outermost first: the dynamic scope for `$dynamicRef`.
    private var dynamicScope: [Int] = []
    /// References being followed, by target and instance depth: along one evaluation path the instance at
    /// a given depth is always the same, so meeting the same pair again is a cycle that never decides.
    private var activeReferences: Set<ActiveReference> = []
    private var depth = 0
    private static let maximumDepth = 2000
    /// The stack of the thread validating: a chain of references within `maximumDepth` can still be
    /// deeper than a small stack holds (a debug build overflowed an 8 MiB one at ~1,900 levels).
    private let stack = ThreadStack.current

    private enum InstanceStep {
        case member(String)
        case index(Int)
    }

    private struct ActiveReference: Hashable {
        let target: ObjectIdentifier
        let depth: Int
    }

    /// Which properties and items were evaluated successfully (for `unevaluated*`).
    struct Annotations {
        /// Compared by code points, as JSON names are (`"OK"` and `"O\u{212A}"` are two properties).
        var properties: Set<PropertyName> = []
        var allItems = false
        var items: Set<Int> = []

        mutating func absorb(_ other: Annotations) {
            properties.formUnion(other.properties)
            allItems = allItems || other.allItems
            items.formUnion(other.items)
        }
    }

    init(program: CompiledProgram, options: ValidationOptions) {
        self.program = program
        self.options = options
        self.formatAsserts = options.formatAssertion || program.formatAssertion
        self.collectsAnnotations = program.collectsAnnotations
    }

    /// Validates `instance` against the program's root; the errors are in ``errors``.
    mutating func run(_ instance: JSONValue) {
        var annotations = Annotations()
        uncounted = instance
        _ = evaluate(program.root, instance, &annotations)
    }

    /// How many values `value` holds, itself included — counted down to 512 levels (the parser's own limit)
    /// and while this thread's stack lasts: an instance built in code may nest deeper than a stack holds, and
    /// what lies below adds no budget.
    private static func count(_ value: JSONValue, depth: Int = 0, stack: ThreadStack) -> Int {
        guard depth < 512, !depth.isMultiple(of: 16) || !stack.isNearlyExhausted() else { return 1 }
        switch value {
        case .array(let elements): return elements.reduce(1) { $0 + count($1, depth: depth + 1, stack: stack) }
        case .object(let members):
            return members.reduce(1) { $0 + count($1.value, depth: depth + 1, stack: stack) }
        default: return 1
        }
    }

    /// Stops the evaluation without an answer (see ``undecided``); every evaluation after it returns at once.
    private mutating func giveUp(_ reason: String) -> Bool {
        if undecided == nil { undecided = reason }
        return false
    }

    // MARK: - Reporting

    private func joinedInstancePath(appending step: InstanceStep? = nil) -> String {
        var path = ""
        for step in instancePath { Self.append(step, to: &path) }
        if let step { Self.append(step, to: &path) }
        return path
    }

    private static func append(_ step: InstanceStep, to path: inout String) {
        switch step {
        case .member(let name): path += "/" + JSONPointer.escape(name)
        case .index(let index): path += "/\(index)"
        }
    }

    /// Records an error at the current instance (or one step below it) and keyword location plus `keyword`.
    private mutating func fail(_ keyword: String, _ message: String, at step: InstanceStep? = nil) {
        errors.append(
            ValidationError(
                instanceLocation: joinedInstancePath(appending: step),
                keywordLocation: keywordPath.joined() + keyword, message: message))
    }

    /// Like ``fail(_:_:at:)``, but placed at `position` (before the errors of the branches it sums up).
    private mutating func fail(inserting position: Int, _ keyword: String, _ message: String) {
        errors.insert(
            ValidationError(
                instanceLocation: joinedInstancePath(), keywordLocation: keywordPath.joined() + keyword,
                message: message),
            at: position)
    }

    private mutating func dropErrors(from position: Int) {
        if errors.count > position { errors.removeSubrange(position...) }
    }

    // MARK: - Evaluating

    /// Evaluates `node` against `instance`; true when it holds. Annotations of this schema go to `annotations`.
    private mutating func evaluate(_ node: CompiledNode, _ instance: JSONValue, _ annotations: inout Annotations)
        -> Bool
    {
        switch node.form {
        case .alwaysValid:
            return true
        case .neverValid:
            fail("", "no value is allowed here (false schema)")
            return false
        case .keywords:
            break
        }
        guard undecided == nil else { return false }
        steps += 1
        if steps > budget, let instance = uncounted {
            uncounted = nil
            budget = Self.baseBudget + 1_000 * Self.count(instance, stack: stack)
        }
        guard steps <= budget else {
            return giveUp("the evaluation took more than \(budget) steps (references that fan out?)")
        }
        depth += 1
        defer { depth -= 1 }
        guard depth <= Self.maximumDepth else {
            return giveUp("schema evaluation nested deeper than \(Self.maximumDepth) levels")
        }
        if depth.isMultiple(of: 8), stack.isNearlyExhausted() {
            return giveUp("schema evaluation nested \(depth) levels deep, more than this thread's stack holds")
        }
        // OpenAPI 3.0 `nullable: true`: null satisfies the whole schema it sits on (what a client that
        // decodes the field as optional accepts), whatever else the schema says.
        if node.nullable, instance == .null, options.openAPINullable { return true }
        let entersResource = dynamicScope.last != node.resource
        if entersResource { dynamicScope.append(node.resource) }
        defer { if entersResource { dynamicScope.removeLast() } }

        let start = errors.count
        if let reference = node.reference { follow(reference, instance, &annotations) }
        if let reference = node.dynamicReference { follow(reference, instance, &annotations) }
        if node.hasInPlaceApplicators { applyInPlace(node, instance, &annotations) }
        // Applicators, then assertions, then format, then the unevaluated keywords (which read what all
        // the others evaluated): the order errors are reported in.
        switch instance {
        case .object(let object):
            if node.hasObjectKeywords { applyObject(node, object, &annotations) }
            if node.typeMask != nil || node.constant != nil || node.enumeration != nil { checkValue(node, instance) }
            if node.hasObjectKeywords {
                checkObject(node, object)
                if let unevaluated = node.unevaluatedProperties {
                    applyUnevaluated(unevaluated, object, &annotations)
                }
            }
        case .array(let array):
            if node.hasArrayKeywords { applyArray(node, array, &annotations) }
            if node.typeMask != nil || node.constant != nil || node.enumeration != nil { checkValue(node, instance) }
            if node.hasArrayKeywords {
                checkArray(node, array)
                if let unevaluated = node.unevaluatedItems, !annotations.allItems {
                    applyUnevaluated(unevaluated, array, &annotations)
                }
            }
        case .number(let number):
            if node.typeMask != nil || node.constant != nil || node.enumeration != nil { checkValue(node, instance) }
            if node.hasNumberKeywords { checkNumber(node, number) }
            if let format = node.format, formatAsserts, FormatChecker.check(format, number) == false {
                fail("/format", "not a valid \(format)")
            }
        case .string(let string):
            if node.typeMask != nil || node.constant != nil || node.enumeration != nil { checkValue(node, instance) }
            if node.hasStringKeywords { checkString(node, string) }
        default:
            if node.typeMask != nil || node.constant != nil || node.enumeration != nil { checkValue(node, instance) }
        }
        return errors.count == start
    }

    /// Evaluates a subschema; its annotations count only when it holds.
    @inline(__always)
    private mutating func apply(_ edge: CompiledNode.Edge, _ instance: JSONValue, _ annotations: inout Annotations)
        -> Bool
    {
        if edge.node.form == .alwaysValid { return true }
        keywordPath.append(edge.segment)
        defer { keywordPath.removeLast() }
        if collectsAnnotations {
            var own = Annotations()
            let valid = evaluate(edge.node, instance, &own)
            if valid { annotations.absorb(own) }
            return valid
        }
        return evaluate(edge.node, instance, &annotations)
    }

    /// Evaluates a subschema against a member or item of the current instance, discarding its annotations.
    @inline(__always)
    private mutating func apply(_ edge: CompiledNode.Edge, _ instance: JSONValue, at step: InstanceStep) -> Bool {
        if edge.node.form == .alwaysValid { return true }
        instancePath.append(step)
        defer { instancePath.removeLast() }
        var ignored = Annotations()
        return apply(edge, instance, &ignored)
    }

    private mutating func follow(
        _ reference: CompiledNode.Reference, _ instance: JSONValue, _ annotations: inout Annotations
    ) {
        guard var target = reference.target else {
            // References were all resolved when the schema was compiled; this cannot happen.
            fail(reference.segment, "unresolvable reference \(reference.text)")
            return
        }
        if let anchor = reference.dynamicAnchor {
            for resource in dynamicScope {
                if let dynamicTarget = program.dynamicTargets[resource]?[anchor] {
                    target = dynamicTarget
                    break
                }
            }
        }
        let key = ActiveReference(target: ObjectIdentifier(target), depth: instancePath.count)
        guard activeReferences.insert(key).inserted else {
            // No answer, not "invalid": under a `not` an invalid branch would read as valid (found in an outside
            // audit: `not: {$ref: <a schema that is only a reference to itself>}` accepted every instance).
            _ = giveUp("circular reference \(reference.text) never reaches a decision")
            return
        }
        defer { activeReferences.remove(key) }
        _ = apply(CompiledNode.Edge(node: target, segment: reference.segment), instance, &annotations)
    }

    // MARK: - In-place applicators

    private mutating func applyInPlace(_ node: CompiledNode, _ instance: JSONValue, _ annotations: inout Annotations) {
        for edge in node.allOf { _ = apply(edge, instance, &annotations) }
        if !node.anyOf.isEmpty {
            let start = errors.count
            var matched = false
            for edge in node.anyOf {
                if apply(edge, instance, &annotations) {
                    matched = true
                    // Every valid branch adds annotations; without them the first match decides.
                    if !collectsAnnotations { break }
                }
            }
            if matched {
                dropErrors(from: start)
            } else {
                fail(inserting: start, "/anyOf", "does not match any of the \(node.anyOf.count) alternatives")
            }
        }
        if !node.oneOf.isEmpty {
            let start = errors.count
            var matches: [Int] = []
            var matchedAnnotations = Annotations()
            for (index, edge) in node.oneOf.enumerated() where apply(edge, instance, &matchedAnnotations) {
                matches.append(index)
            }
            if matches.count == 1 {
                dropErrors(from: start)
                if collectsAnnotations { annotations.absorb(matchedAnnotations) }
            } else if matches.isEmpty {
                fail(inserting: start, "/oneOf", "does not match any of the \(node.oneOf.count) alternatives")
            } else {
                dropErrors(from: start)
                fail(
                    "/oneOf",
                    "matches alternatives \(matches.map(String.init).joined(separator: " and ")); exactly one must match"
                )
            }
        }
        if let not = node.not {
            let start = errors.count
            var ignored = Annotations()
            let holds = apply(not, instance, &ignored)
            dropErrors(from: start)
            if holds { fail("/not", "must not match the schema under \"not\"") }
        }
        if let condition = node.condition {
            let start = errors.count
            let holds = apply(condition, instance, &annotations)
            dropErrors(from: start)
            if let branch = holds ? node.then : node.otherwise { _ = apply(branch, instance, &annotations) }
        }
        if case .object(let object) = instance {
            for (property, dependency, segment) in node.dependencies where object.contains(key: property) {
                switch dependency {
                case .names(let names):
                    for name in names where !object.contains(key: name) {
                        fail(
                            segment,
                            "property \(name.debugDescription) is required when \(property.debugDescription) is present"
                        )
                    }
                case .schema(let edge):
                    _ = apply(edge, instance, &annotations)
                }
            }
            for (property, edge) in node.dependentSchemas where object.contains(key: property) {
                _ = apply(edge, instance, &annotations)
            }
        }
    }

    // MARK: - Objects

    private mutating func applyObject(_ node: CompiledNode, _ object: JSONObject, _ annotations: inout Annotations) {
        let needsMatchedNames = node.additionalProperties != nil
        var matchedByProperties: Set<PropertyName> = []
        for property in node.properties {
            guard let value = object[property.name] else { continue }
            if needsMatchedNames { matchedByProperties.insert(.init(name: property.name)) }
            let valid = apply(property.edge, value, at: .member(property.name))
            if valid && collectsAnnotations { annotations.properties.insert(.init(name: property.name)) }
        }
        for pattern in node.patternProperties {
            for (name, value) in object where pattern.regex.matches(name) {
                if needsMatchedNames { matchedByProperties.insert(.init(name: name)) }
                let valid = apply(pattern.edge, value, at: .member(name))
                if valid && collectsAnnotations { annotations.properties.insert(.init(name: name)) }
            }
        }
        if let additional = node.additionalProperties {
            for (name, value) in object where !matchedByProperties.contains(.init(name: name)) {
                let start = errors.count
                if apply(additional, value, at: .member(name)) {
                    if collectsAnnotations { annotations.properties.insert(.init(name: name)) }
                } else if node.additionalPropertiesIsFalse {
                    dropErrors(from: start)
                    fail("/additionalProperties", "property \(name.debugDescription) is not allowed", at: .member(name))
                }
            }
        }
        if let names = node.propertyNames {
            for (name, _) in object {
                let start = errors.count
                if !apply(names, .string(name), at: .member(name)) {
                    dropErrors(from: start)
                    fail("/propertyNames", "property name \(name.debugDescription) is not allowed")
                }
            }
        }
    }

    private mutating func applyUnevaluated(
        _ unevaluated: CompiledNode.Edge, _ object: JSONObject, _ annotations: inout Annotations
    ) {
        for (name, value) in object where !annotations.properties.contains(.init(name: name)) {
            let start = errors.count
            if apply(unevaluated, value, at: .member(name)) {
                annotations.properties.insert(.init(name: name))
            } else {
                dropErrors(from: start)
                fail(
                    "/unevaluatedProperties", "property \(name.debugDescription) is not allowed (unevaluated)",
                    at: .member(name))
            }
        }
    }

    private mutating func checkObject(_ node: CompiledNode, _ object: JSONObject) {
        if let limit = node.maxProperties, object.count > limit {
            fail("/maxProperties", "must have at most \(limit) properties, has \(object.count)")
        }
        if let limit = node.minProperties, object.count < limit {
            fail("/minProperties", "must have at least \(limit) properties, has \(object.count)")
        }
        for name in node.required where !object.contains(key: name) {
            fail("/required", "missing required property \(name.debugDescription)")
        }
        for (property, names) in node.dependentRequired where object.contains(key: property) {
            for name in names where !object.contains(key: name) {
                fail(
                    "/dependentRequired/" + JSONPointer.escape(property),
                    "property \(name.debugDescription) is required when \(property.debugDescription) is present")
            }
        }
    }

    // MARK: - Arrays

    private mutating func applyArray(_ node: CompiledNode, _ array: [JSONValue], _ annotations: inout Annotations) {
        for (index, edge) in node.prefixItems.enumerated() where index < array.count {
            if apply(edge, array[index], at: .index(index)) {
                if collectsAnnotations { annotations.items.insert(index) }
            }
        }
        if let items = node.items {
            var allValid = true
            for index in array.indices where index >= node.prefixItems.count {
                let start = errors.count
                if !apply(items, array[index], at: .index(index)) {
                    allValid = false
                    if node.itemsIsFalse {
                        dropErrors(from: start)
                        fail("/items", "no item is allowed at index \(index)", at: .index(index))
                    }
                }
            }
            if allValid { annotations.allItems = true }
        }
        if let contains = node.contains {
            var matchCount = 0
            for index in array.indices {
                let start = errors.count
                if apply(contains, array[index], at: .index(index)) {
                    matchCount += 1
                    if collectsAnnotations { annotations.items.insert(index) }
                }
                dropErrors(from: start)
            }
            if matchCount < node.minContains {
                fail(
                    node.minContainsSegment,
                    "must contain at least \(node.minContains) matching item(s), found \(matchCount)")
            }
            if let maximum = node.maxContains, matchCount > maximum {
                fail("/maxContains", "must contain at most \(maximum) matching item(s), found \(matchCount)")
            }
        }
    }

    private mutating func applyUnevaluated(
        _ unevaluated: CompiledNode.Edge, _ array: [JSONValue], _ annotations: inout Annotations
    ) {
        var allValid = true
        for index in array.indices where !annotations.items.contains(index) {
            let start = errors.count
            if !apply(unevaluated, array[index], at: .index(index)) {
                allValid = false
                dropErrors(from: start)
                fail("/unevaluatedItems", "item \(index) is not allowed (unevaluated)", at: .index(index))
            }
        }
        if allValid { annotations.allItems = true }
    }

    private mutating func checkArray(_ node: CompiledNode, _ array: [JSONValue]) {
        if let limit = node.maxItems, array.count > limit {
            fail("/maxItems", "must have at most \(limit) items, has \(array.count)")
        }
        if let limit = node.minItems, array.count < limit {
            fail("/minItems", "must have at least \(limit) items, has \(array.count)")
        }
        if node.uniqueItems {
            var seen: [JSONValue: Int] = [:]
            for (index, element) in array.enumerated() {
                if let first = seen[element] {
                    fail("/uniqueItems", "items \(first) and \(index) are equal; items must be unique")
                    break
                }
                seen[element] = index
            }
        }
    }

    // MARK: - Assertions

    private mutating func checkValue(_ node: CompiledNode, _ instance: JSONValue) {
        if let mask = node.typeMask, !Self.matches(instance, mask) {
            fail("/type", "expected \(node.typeNames.joined(separator: " or ")), found \(Self.typeName(of: instance))")
        }
        if let constant = node.constant, constant != instance {
            fail("/const", "must equal \(Self.excerpt(constant))")
        }
        if let values = node.enumeration, !values.contains(instance) {
            fail("/enum", "must be one of \(Self.excerpt(.array(values)))")
        }
    }

    private mutating func checkNumber(_ node: CompiledNode, _ number: JSONNumber) {
        if let divisor = node.multipleOf, !number.isMultiple(of: divisor) {
            fail("/multipleOf", "must be a multiple of \(divisor)")
        }
        if let limit = node.maximum, number > limit { fail("/maximum", "must be at most \(limit)") }
        if let limit = node.exclusiveMaximum, number >= limit {
            fail("/exclusiveMaximum", "must be less than \(limit)")
        }
        if let limit = node.minimum, number < limit { fail("/minimum", "must be at least \(limit)") }
        if let limit = node.exclusiveMinimum, number <= limit {
            fail("/exclusiveMinimum", "must be greater than \(limit)")
        }
    }

    private mutating func checkString(_ node: CompiledNode, _ string: String) {
        // Lengths count Unicode code points, as the specification says (not grapheme clusters). A string
        // has at most as many code points as UTF-8 bytes and at least a quarter as many: most lengths are
        // decided without counting.
        if node.maxLength != nil || node.minLength != nil {
            let bytes = string.utf8.count
            if let limit = node.maxLength, bytes > limit {
                let length = string.unicodeScalars.count
                if length > limit { fail("/maxLength", "must be at most \(limit) characters long, is \(length)") }
            }
            if let limit = node.minLength, bytes / 4 < limit {  // bytes < limit × 4, without overflowing
                let length = string.unicodeScalars.count
                if length < limit { fail("/minLength", "must be at least \(limit) characters long, is \(length)") }
            }
        }
        if let pattern = node.pattern, !pattern.regex.matches(string) {
            fail("/pattern", "must match the pattern \(pattern.text.debugDescription)")
        }
        if let format = node.format, formatAsserts, FormatChecker.check(format, string) == false {
            fail("/format", "not a valid \(format)")
        }
    }

    // MARK: - Helpers

    private static func matches(_ instance: JSONValue, _ mask: UInt8) -> Bool {
        switch instance {
        case .null: return mask & CompiledNode.TypeBit.null != 0
        case .bool: return mask & CompiledNode.TypeBit.boolean != 0
        case .string: return mask & CompiledNode.TypeBit.string != 0
        case .array: return mask & CompiledNode.TypeBit.array != 0
        case .object: return mask & CompiledNode.TypeBit.object != 0
        case .number(let number):
            if mask & CompiledNode.TypeBit.number != 0 { return true }
            return mask & CompiledNode.TypeBit.integer != 0 && number.isInteger
        }
    }

    private static func typeName(of instance: JSONValue) -> String {
        if case .number(let number) = instance, number.isInteger { return "integer" }
        return instance.kind
    }

    /// At most 60 characters of a value's JSON, for messages.
    static func excerpt(_ value: JSONValue) -> String {
        let text = value.description
        return text.count > 60 ? String(text.prefix(57)) + "..." : text
    }
}

/// A property name compared by code points, as JSON compares names: `"OK"` and `"O\u{212A}"` (KELVIN SIGN)
/// are two properties, which Swift's `String` equality (canonical equivalence) would merge.
struct PropertyName: Hashable {
    let name: String

    static func == (lhs: PropertyName, rhs: PropertyName) -> Bool { JSONObject.sameName(lhs.name, rhs.name) }

    func hash(into hasher: inout Hasher) {
        for byte in name.utf8 { hasher.combine(byte) }
        hasher.combine(name.utf8.count)
    }
}
