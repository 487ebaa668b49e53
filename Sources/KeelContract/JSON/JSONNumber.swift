/// A JSON number kept exactly as written, compared and hashed by its mathematical value.
///
/// JSON numbers have no size or precision limit; `Double` and `Int64` both lose some of them (an id of
/// 2^63 + 1, a price of `0.1`). `JSONNumber` keeps the literal for lossless round trips and an exact
/// decimal form (sign, digits, exponent) for comparisons, so `1`, `1.0` and `10e-1` are equal and
/// `12345678901234567890123` stays distinct from its neighbours.
///
/// ## Topics
/// - ``literal``, ``int64``, ``double``, ``isInteger``
/// - ``init(_:)-(Int64)``, ``init(_:)-(Double)``, ``init(literal:)``
public struct JSONNumber: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The number as it appeared in JSON text (or as produced by an initializer).
    public let literal: String
    /// Exact value: `(isNegative ? -1 : 1) × digits × 10^exponent`, where `digits` has no leading or
    /// trailing zeros (empty for zero, which is never negative).
    let isNegative: Bool
    let digits: [UInt8]
    let exponent: Int

    /// Parses a JSON number literal (RFC 8259 grammar). Returns nil when `literal` is not one.
    public init?(literal: String) {
        let decomposed = literal.utf8.withContiguousStorageIfAvailable { Self.decompose($0) }
        guard let parts = decomposed ?? Array(literal.utf8).withUnsafeBufferPointer({ Self.decompose($0) }) else {
            return nil
        }
        self.literal = literal
        (isNegative, digits, exponent) = parts
    }

    /// The number `value`.
    public init(_ value: Int64) {
        self.init(literal: String(value))!
    }

    /// The number `value`. Precondition: `value` is finite (JSON has no NaN or infinity).
    public init(_ value: Double) {
        precondition(value.isFinite, "JSON cannot represent \(value)")
        if value == value.rounded(), abs(value) < 1e15 {
            self.init(literal: String(Int64(value)))!
        } else {
            let text = value.description
            self.init(literal: text.contains("e+") ? text.replacingOccurrences(of: "e+", with: "e") : text)!
        }
    }

    /// For the parser, which has already checked the grammar; nil only for an out-of-range exponent.
    init?(literalBytes bytes: ArraySlice<UInt8>) {
        guard let parts = bytes.withUnsafeBufferPointer({ Self.decompose($0) }) else { return nil }
        literal = String(decoding: bytes, as: UTF8.self)
        (isNegative, digits, exponent) = parts
    }

    /// The number's literal, exactly as written (`1.0` stays `1.0`).
    public var description: String { literal }

    /// Whether the value has no fractional part (`1.0` and `1e3` are integers; JSON Schema agrees).
    public var isInteger: Bool { exponent >= 0 }

    /// The value as `Int64`, when it is an integer in range.
    public var int64: Int64? {
        guard isInteger else { return nil }
        if digits.isEmpty { return 0 }
        guard digits.count + exponent <= 19 else { return nil }
        var magnitude: UInt64 = 0
        for digit in digits {
            let (times10, o1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times10.addingReportingOverflow(UInt64(digit - 48))
            guard !o1, !o2 else { return nil }
            magnitude = sum
        }
        for _ in 0..<exponent {
            let (times10, overflow) = magnitude.multipliedReportingOverflow(by: 10)
            guard !overflow else { return nil }
            magnitude = times10
        }
        if isNegative {
            return magnitude <= UInt64(Int64.max) + 1 ? Int64(truncatingIfNeeded: 0 &- magnitude) : nil
        }
        return magnitude <= UInt64(Int64.max) ? Int64(magnitude) : nil
    }

    /// The nearest `Double` (may be ±infinity for literals beyond its range, or lose precision).
    public var double: Double { Double(literal) ?? (isNegative ? -.infinity : .infinity) }

    /// Whether the two numbers have the same mathematical value, whatever their literals (`1`, `1.0`, `10e-1`).
    public static func == (lhs: JSONNumber, rhs: JSONNumber) -> Bool {
        lhs.isNegative == rhs.isNegative && lhs.digits == rhs.digits && lhs.exponent == rhs.exponent
    }

    /// Hashes the exact value, not the literal, consistently with `==`.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(isNegative)
        hasher.combine(digits)
        hasher.combine(exponent)
    }

    /// Whether `lhs` is numerically smaller than `rhs`, compared exactly at any size or precision.
    public static func < (lhs: JSONNumber, rhs: JSONNumber) -> Bool {
        if lhs.isNegative != rhs.isNegative { return lhs.isNegative }
        let magnitudeOrder = compareMagnitude(lhs, rhs)
        return lhs.isNegative ? magnitudeOrder > 0 : magnitudeOrder < 0
    }

    /// Whether `self` is an integer multiple of `divisor` (exact for any size; `divisor` must be > 0).
    public func isMultiple(of divisor: JSONNumber) -> Bool {
        if digits.isEmpty { return true }
        guard !divisor.digits.isEmpty else { return false }
        // self / divisor = (D1 / D2) × 10^(e1 - e2); integer iff D1 × 10^(e1-e2) ≡ 0 (mod D2) when e1 ≥ e2,
        // or D1 ≡ 0 (mod D2 × 10^(e2-e1)) otherwise. Work with the remainder to stay small.
        let shift = exponent - divisor.exponent
        // With shift < 0 the quotient is D1 / (D2 × 10^-shift); D1 has no trailing zeros (they are
        // folded into the exponent), so it is never divisible by a multiple of 10.
        guard shift >= 0 else { return false }
        guard divisor.digits.count <= 18 else {
            // A divisor beyond 18 significant digits: approximate on the full values with floating point
            // (documented; such divisors do not occur in real contracts).
            let quotient = double / divisor.double
            return quotient.isFinite && quotient == quotient.rounded()
        }
        return remainder(of: digits, extraZeros: shift, modulo: divisor.digits)
    }

    // MARK: - Exact arithmetic helpers

    /// -1, 0, 1 as |lhs| <, ==, > |rhs|.
    private static func compareMagnitude(_ lhs: JSONNumber, _ rhs: JSONNumber) -> Int {
        if lhs.digits.isEmpty || rhs.digits.isEmpty {
            return lhs.digits.isEmpty ? (rhs.digits.isEmpty ? 0 : -1) : 1
        }
        // Order of magnitude: number of digits before the decimal point.
        let lhsMagnitude = lhs.digits.count + lhs.exponent
        let rhsMagnitude = rhs.digits.count + rhs.exponent
        if lhsMagnitude != rhsMagnitude { return lhsMagnitude < rhsMagnitude ? -1 : 1 }
        let length = max(lhs.digits.count, rhs.digits.count)
        for index in 0..<length {
            let a = index < lhs.digits.count ? lhs.digits[index] : 48
            let b = index < rhs.digits.count ? rhs.digits[index] : 48
            if a != b { return a < b ? -1 : 1 }
        }
        return 0
    }

    /// Whether (dividend × 10^extraZeros) mod divisor == 0: long division over the digits, then
    /// 10^extraZeros by modular exponentiation (fast for any exponent).
    private func remainder(of dividend: [UInt8], extraZeros: Int, modulo divisor: [UInt8]) -> Bool {
        var modulus: UInt64 = 0
        for digit in divisor { modulus = modulus * 10 + UInt64(digit - 48) }
        var rest: UInt64 = 0
        for digit in dividend { rest = (rest * 10 + UInt64(digit - 48)) % modulus }
        if rest == 0 { return true }
        return Self.multiplyMod(rest, Self.powerMod(10, extraZeros, modulus), modulus) == 0
    }

    private static func multiplyMod(_ a: UInt64, _ b: UInt64, _ m: UInt64) -> UInt64 {
        let product = a.multipliedFullWidth(by: b)
        return m.dividingFullWidth((product.high, product.low)).remainder
    }

    private static func powerMod(_ base: UInt64, _ exponent: Int, _ m: UInt64) -> UInt64 {
        var result: UInt64 = 1 % m
        var factor = base % m
        var remaining = exponent
        while remaining > 0 {
            if remaining & 1 == 1 { result = multiplyMod(result, factor, m) }
            factor = multiplyMod(factor, factor, m)
            remaining >>= 1
        }
        return result
    }

    /// Splits a JSON number literal into sign, significant digits and exponent; nil if not a JSON number.
    /// One allocation (the significant digits), none for zero.
    private static func decompose(_ bytes: UnsafeBufferPointer<UInt8>) -> (Bool, [UInt8], Int)? {
        var index = 0
        var negative = false
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") {
            negative = true
            index += 1
        }
        let integerStart = index
        while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        let integerCount = index - integerStart
        guard integerCount > 0, integerCount == 1 || bytes[integerStart] != UInt8(ascii: "0") else { return nil }
        var fractionStart = index
        var fractionCount = 0
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            fractionStart = index
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
            fractionCount = index - fractionStart
            guard fractionCount > 0 else { return nil }
        }
        var exponent = 0
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            var exponentNegative = false
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                exponentNegative = bytes[index] == UInt8(ascii: "-")
                index += 1
            }
            let start = index
            while index < bytes.count, isDigit(bytes[index]) {
                exponent = exponent * 10 + Int(bytes[index] - 48)
                // Exponents beyond ±999,999,999 are refused rather than approximated (exact comparison
                // is promised); the parser reports them as invalid numbers.
                guard exponent <= maximumExponent else { return nil }
                index += 1
            }
            guard index > start else { return nil }
            if exponentNegative { exponent = -exponent }
        }
        guard index == bytes.count else { return nil }
        // The significant digits are the integer digits then the fraction digits, without leading or
        // trailing zeros (trailing ones move into the exponent).
        let total = integerCount + fractionCount
        func digit(_ position: Int) -> UInt8 {
            position < integerCount ? bytes[integerStart + position] : bytes[fractionStart + position - integerCount]
        }
        exponent -= fractionCount
        var first = 0
        while first < total, digit(first) == UInt8(ascii: "0") { first += 1 }
        if first == total { return (false, [], 0) }
        var last = total - 1
        while digit(last) == UInt8(ascii: "0") { last -= 1 }
        exponent += total - 1 - last
        let significant = [UInt8](unsafeUninitializedCapacity: last - first + 1) { buffer, initialized in
            for position in first...last { buffer[position - first] = digit(position) }
            initialized = last - first + 1
        }
        return (negative, significant, exponent)
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= 48 && byte <= 57 }

    /// The largest exponent magnitude a literal may carry.
    static let maximumExponent = 999_999_999
}
