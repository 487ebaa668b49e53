/// A JSON number kept exactly as written, compared and hashed by its mathematical value.
///
/// JSON numbers have no size or precision limit; `Double` and `Int64` both lose some of them (an id of
/// 2^63 + 1, a price of `0.1`). `JSONNumber` keeps the literal for lossless round trips and compares by
/// the exact decimal value it spells (sign, significant digits, exponent, read from the literal), so `1`,
/// `1.0` and `10e-1` are equal and `12345678901234567890123` stays distinct from its neighbours.
///
/// ## Topics
/// - ``literal``, ``int64``, ``double``, ``isInteger``
/// - ``init(_:)-(Int64)``, ``init(_:)-(Double)``, ``init(literal:)``
public struct JSONNumber: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The number as it appeared in JSON text (or as produced by an initializer).
    ///
    /// The only stored property: the exact value is read from it when a comparison needs it (see
    /// ``Decimal``), so a number costs a `JSONValue` no more than a string does and creating one allocates
    /// nothing beyond the literal (none at all for literals of up to 15 bytes).
    public let literal: String

    /// Parses a JSON number literal (RFC 8259 grammar). Returns nil when `literal` is not one.
    public init?(literal: String) {
        guard Self.withBytes(of: literal, { Decimal($0) != nil }) else { return nil }
        self.literal = literal
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
            // Swift writes `1e+20`; the exponent is kept without its `+`. Found by byte: Foundation's
            // `contains(_:)` on strings cost more than the rest of the conversion (a settlement record's
            // timestamp, on every acknowledged mutation).
            var text = value.description
            if let plus = text.utf8.firstIndex(of: UInt8(ascii: "+")) { text.remove(at: plus) }
            self.init(literal: text)!
        }
    }

    /// For the parser, which has already checked the grammar; nil only for an out-of-range exponent.
    init?(literalBytes bytes: ArraySlice<UInt8>) {
        guard bytes.withUnsafeBufferPointer({ Decimal($0) != nil }) else { return nil }
        literal = String(decoding: bytes, as: UTF8.self)
    }

    /// The number's literal, exactly as written (`1.0` stays `1.0`).
    public var description: String { literal }

    /// Whether the value has no fractional part (`1.0` and `1e3` are integers; JSON Schema agrees).
    public var isInteger: Bool { withDecimal { $0.exponent >= 0 } }

    /// Whether Foundation's `Decimal` holds the value exactly: at most 38 significant digits, and an exponent
    /// in its range (−128...127) once trailing zeros are folded into it (or out of it, into the digits).
    package var fitsFoundationDecimal: Bool {
        withDecimal { value in
            // A larger exponent fits while the zeros it stands for still fit in the 38 digits.
            value.count <= 38 && value.exponent >= -128
                && (value.exponent <= 127 || value.count + value.exponent - 127 <= 38)
        }
    }

    /// The value as `Int64`, when it is an integer in range.
    public var int64: Int64? { exactInteger(Int64.self) }

    /// The value as a `T`, when it is exactly an integer in `T`'s range, read from the literal's own digits
    /// and exponent however many there are (`1.0`, `1e2`, `-9.223372036854775808e18`); nil otherwise.
    package func exactInteger<T: FixedWidthInteger>(_ type: T.Type) -> T? {
        withDecimal { decimal -> T? in
            guard decimal.exponent >= 0 else { return nil }
            if decimal.count == 0 { return 0 }
            // More digits than any fixed-width integer has (UInt128: 39) cannot fit.
            guard decimal.count + decimal.exponent <= 40 else { return nil }
            // Accumulated toward the sign, so that T.min (one more than T.max in magnitude) fits.
            var result: T = 0
            for index in 0..<(decimal.count + decimal.exponent) {
                let digit: T = index < decimal.count ? T(decimal[index] - 48) : 0
                let (times10, o1) = result.multipliedReportingOverflow(by: 10)
                let (next, o2) =
                    decimal.isNegative
                    ? times10.subtractingReportingOverflow(digit) : times10.addingReportingOverflow(digit)
                guard !o1, !o2 else { return nil }
                result = next
            }
            return result
        }
    }

    /// The nearest `Double` (may be ±infinity for literals beyond its range, or lose precision).
    public var double: Double {
        Double(literal) ?? (withDecimal(\.isNegative) ? -.infinity : .infinity)
    }

    /// Whether the two numbers have the same mathematical value, whatever their literals (`1`, `1.0`, `10e-1`).
    public static func == (lhs: JSONNumber, rhs: JSONNumber) -> Bool {
        // The same literal is the same value (literals are ASCII, so String equality is byte equality).
        if lhs.literal == rhs.literal { return true }
        return lhs.withDecimal { left in
            rhs.withDecimal { right in
                guard left.isNegative == right.isNegative, left.count == right.count,
                    left.exponent == right.exponent
                else { return false }
                for index in 0..<left.count where left[index] != right[index] { return false }
                return true
            }
        }
    }

    /// Hashes the exact value, not the literal, consistently with `==`.
    public func hash(into hasher: inout Hasher) {
        withDecimal { decimal in
            hasher.combine(decimal.isNegative)
            hasher.combine(decimal.count)
            for index in 0..<decimal.count { hasher.combine(decimal[index]) }
            hasher.combine(decimal.exponent)
        }
    }

    /// Whether `lhs` is numerically smaller than `rhs`, compared exactly at any size or precision.
    public static func < (lhs: JSONNumber, rhs: JSONNumber) -> Bool {
        lhs.withDecimal { left in
            rhs.withDecimal { right in
                if left.isNegative != right.isNegative { return left.isNegative }
                let magnitudeOrder = compareMagnitude(left, right)
                return left.isNegative ? magnitudeOrder > 0 : magnitudeOrder < 0
            }
        }
    }

    /// Whether `self` is an integer multiple of `divisor` (exact for any size; `divisor` must be > 0).
    public func isMultiple(of divisor: JSONNumber) -> Bool {
        withDecimal { value in
            divisor.withDecimal { divisorValue in
                if value.count == 0 { return true }
                guard divisorValue.count > 0 else { return false }
                // self / divisor = (D1 / D2) × 10^(e1 - e2); integer iff D1 × 10^(e1-e2) ≡ 0 (mod D2) when
                // e1 ≥ e2, or D1 ≡ 0 (mod D2 × 10^(e2-e1)) otherwise. Work with the remainder to stay small.
                let shift = value.exponent - divisorValue.exponent
                // With shift < 0 the quotient is D1 / (D2 × 10^-shift); D1 has no trailing zeros (they are
                // folded into the exponent), so it is never divisible by a multiple of 10.
                guard shift >= 0 else { return false }
                guard divisorValue.count <= 19 else {
                    // A divisor beyond 19 significant digits (more than a UInt64 holds): approximate on the full
                    // values with floating point (documented; such divisors do not occur in real contracts).
                    let quotient = double / divisor.double
                    return quotient.isFinite && quotient == quotient.rounded()
                }
                return Self.remainder(of: value, extraZeros: shift, modulo: divisorValue)
            }
        }
    }

    // MARK: - The exact value

    /// The exact value of a literal, read in place: `(isNegative ? -1 : 1) × digits × 10^exponent`, where
    /// the significant digits (`self[0..<count]`, ASCII) have no leading or trailing zeros (none for zero,
    /// which is never negative). Valid only while the literal's bytes are.
    struct Decimal {
        let isNegative: Bool
        /// How many significant digits.
        let count: Int
        let exponent: Int
        private let bytes: UnsafeBufferPointer<UInt8>
        /// Where the integer part starts and how long it is; where the fraction starts.
        private let integerStart: Int
        private let integerCount: Int
        private let fractionStart: Int
        /// The position (among integer then fraction digits) of the first significant digit.
        private let first: Int

        /// The literal's value; nil if `bytes` is not a JSON number or its exponent is out of range.
        init?(_ bytes: UnsafeBufferPointer<UInt8>) {
            var index = 0
            var negative = false
            if index < bytes.count, bytes[index] == UInt8(ascii: "-") {
                negative = true
                index += 1
            }
            let integerStart = index
            while index < bytes.count, Self.isDigit(bytes[index]) { index += 1 }
            let integerCount = index - integerStart
            guard integerCount > 0, integerCount == 1 || bytes[integerStart] != UInt8(ascii: "0") else { return nil }
            var fractionStart = index
            var fractionCount = 0
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                fractionStart = index
                while index < bytes.count, Self.isDigit(bytes[index]) { index += 1 }
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
                while index < bytes.count, Self.isDigit(bytes[index]) {
                    exponent = exponent * 10 + Int(bytes[index] - 48)
                    // Exponents beyond ±999,999,999 are refused rather than approximated (exact comparison
                    // is promised); the parser reports them as invalid numbers.
                    guard exponent <= JSONNumber.maximumExponent else { return nil }
                    index += 1
                }
                guard index > start else { return nil }
                if exponentNegative { exponent = -exponent }
            }
            guard index == bytes.count else { return nil }
            // The significant digits are the integer digits then the fraction digits, without leading or
            // trailing zeros (trailing ones move into the exponent).
            func digit(at position: Int) -> UInt8 {
                Self.digit(
                    at: position, bytes, integerStart: integerStart, integerCount: integerCount,
                    fractionStart: fractionStart)
            }
            let total = integerCount + fractionCount
            var first = 0
            while first < total, digit(at: first) == UInt8(ascii: "0") { first += 1 }
            var last = total - 1
            while last >= first, digit(at: last) == UInt8(ascii: "0") { last -= 1 }
            self.bytes = bytes
            self.integerStart = integerStart
            self.integerCount = integerCount
            self.fractionStart = fractionStart
            if first == total {
                (self.first, count, self.exponent, isNegative) = (0, 0, 0, false)
            } else {
                self.first = first
                count = last - first + 1
                self.exponent = exponent - fractionCount + total - 1 - last
                isNegative = negative
            }
        }

        /// The significant digit at `index` (0 is the most significant), as an ASCII byte.
        subscript(index: Int) -> UInt8 { digit(at: first + index) }

        private func digit(at position: Int) -> UInt8 {
            Self.digit(
                at: position, bytes, integerStart: integerStart, integerCount: integerCount,
                fractionStart: fractionStart)
        }

        private static func digit(
            at position: Int, _ bytes: UnsafeBufferPointer<UInt8>, integerStart: Int, integerCount: Int,
            fractionStart: Int
        ) -> UInt8 {
            position < integerCount ? bytes[integerStart + position] : bytes[fractionStart + position - integerCount]
        }

        private static func isDigit(_ byte: UInt8) -> Bool { byte >= 48 && byte <= 57 }
    }

    /// `body` applied to the literal's exact value.
    private func withDecimal<R>(_ body: (Decimal) -> R) -> R {
        // Every JSONNumber's literal was read as a valid decimal when it was made.
        Self.withBytes(of: literal) { body(Decimal($0)!) }
    }

    /// `body` applied to the UTF-8 bytes of `text`, contiguous.
    private static func withBytes<R>(of text: String, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        if let result = text.utf8.withContiguousStorageIfAvailable(body) { return result }
        return Array(text.utf8).withUnsafeBufferPointer(body)
    }

    // MARK: - Exact arithmetic helpers

    /// -1, 0, 1 as |lhs| <, ==, > |rhs|.
    private static func compareMagnitude(_ lhs: Decimal, _ rhs: Decimal) -> Int {
        if lhs.count == 0 || rhs.count == 0 {
            return lhs.count == 0 ? (rhs.count == 0 ? 0 : -1) : 1
        }
        // Order of magnitude: number of digits before the decimal point.
        let lhsMagnitude = lhs.count + lhs.exponent
        let rhsMagnitude = rhs.count + rhs.exponent
        if lhsMagnitude != rhsMagnitude { return lhsMagnitude < rhsMagnitude ? -1 : 1 }
        let length = max(lhs.count, rhs.count)
        for index in 0..<length {
            let a = index < lhs.count ? lhs[index] : 48
            let b = index < rhs.count ? rhs[index] : 48
            if a != b { return a < b ? -1 : 1 }
        }
        return 0
    }

    /// Whether (dividend × 10^extraZeros) mod divisor == 0: long division over the digits, then
    /// 10^extraZeros by modular exponentiation (fast for any exponent).
    private static func remainder(of dividend: Decimal, extraZeros: Int, modulo divisor: Decimal) -> Bool {
        var modulus: UInt64 = 0
        for index in 0..<divisor.count { modulus = modulus * 10 + UInt64(divisor[index] - 48) }
        var rest: UInt64 = 0
        // `rest × 10` may pass UInt64 with a 19-digit modulus: multiplied at full width; `+ digit` cannot
        // (rest < modulus < 10^19, and 10^19 + 9 < 2^64).
        for index in 0..<dividend.count {
            rest = (multiplyMod(rest, 10, modulus) + UInt64(dividend[index] - 48)) % modulus
        }
        if rest == 0 { return true }
        return multiplyMod(rest, powerMod(10, extraZeros, modulus), modulus) == 0
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

    /// The largest exponent magnitude a literal may carry.
    static let maximumExponent = 999_999_999
}
