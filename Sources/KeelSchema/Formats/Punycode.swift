import Foundation

enum Punycode {
    private static let base = 36
    private static let tMin = 1
    private static let tMax = 26
    private static let skew = 38
    private static let damp = 700
    private static let initialBias = 72
    private static let initialN = 0x80
    /// Overflow bound; RFC 3492 §6.4 requires detecting overflow rather than wrapping.
    private static let limit = Int(Int32.max)

    /// The bias adaptation function of RFC 3492 §6.1.
    private static func adapt(_ delta: Int, _ pointCount: Int, _ isFirst: Bool) -> Int {
        var delta = isFirst ? delta / damp : delta / 2
        delta += delta / pointCount
        var k = 0
        while delta > ((base - tMin) * tMax) / 2 {
            delta /= base - tMin
            k += base
        }
        return k + (base - tMin + 1) * delta / (delta + skew)
    }

    /// The threshold for digit position `k`.
    private static func threshold(_ k: Int, _ bias: Int) -> Int {
        k <= bias ? tMin : (k >= bias + tMax ? tMax : k - bias)
    }

    /// The digit value of a Punycode character (letters are case-insensitive), or `nil`.
    private static func digitValue(_ scalar: Unicode.Scalar) -> Int? {
        switch scalar {
        case "a"..."z": return Int(scalar.value - 0x61)
        case "A"..."Z": return Int(scalar.value - 0x41)
        case "0"..."9": return Int(scalar.value - 0x30) + 26
        default: return nil
        }
    }

    /// The lower-case Punycode character for a digit value below 36.
    private static func digitScalar(_ digit: Int) -> Unicode.Scalar {
        let value = digit < 26 ? 0x61 + digit : 0x30 + digit - 26
        return Unicode.Scalar(UInt8(truncatingIfNeeded: value))
    }

    /// Decodes `input` (the part after `xn--`), or `nil` when it is malformed or overflows.
    static func decode(_ input: [Unicode.Scalar]) -> [Unicode.Scalar]? {
        var output: [Unicode.Scalar] = []
        var position = 0
        if let delimiter = input.lastIndex(of: "-") {
            output = Array(input[..<delimiter])
            guard output.allSatisfy(\.isASCII) else { return nil }
            position = delimiter + 1
        }
        var n = initialN
        var i = 0
        var bias = initialBias
        while position < input.count {
            let oldI = i
            var weight = 1
            var k = base
            while true {
                guard position < input.count, let digit = digitValue(input[position]) else { return nil }
                position += 1
                guard digit <= (limit - i) / weight else { return nil }
                i += digit * weight
                let t = threshold(k, bias)
                if digit < t { break }
                guard weight <= limit / (base - t) else { return nil }
                weight *= base - t
                k += base
            }
            let count = output.count + 1
            bias = adapt(i - oldI, count, oldI == 0)
            guard i / count <= limit - n else { return nil }
            n += i / count
            i %= count
            guard let scalar = Unicode.Scalar(UInt32(clamping: n)) else { return nil }
            output.insert(scalar, at: i)
            i += 1
        }
        return output
    }

    /// Encodes `input` to the Punycode string that follows `xn--`, or `nil` on overflow.
    static func encode(_ input: [Unicode.Scalar]) -> [Unicode.Scalar]? {
        var output = input.filter(\.isASCII)
        let basicCount = output.count
        var handled = basicCount
        if basicCount > 0 { output.append("-") }
        var n = initialN
        var delta = 0
        var bias = initialBias
        while handled < input.count {
            guard let next = input.lazy.map({ Int($0.value) }).filter({ $0 >= n }).min() else { return nil }
            guard next - n <= (limit - delta) / (handled + 1) else { return nil }
            delta += (next - n) * (handled + 1)
            n = next
            for scalar in input {
                let value = Int(scalar.value)
                if value < n {
                    delta += 1
                    guard delta <= limit else { return nil }
                }
                guard value == n else { continue }
                var q = delta
                var k = base
                while true {
                    let t = threshold(k, bias)
                    if q < t { break }
                    output.append(digitScalar(t + (q - t) % (base - t)))
                    q = (q - t) / (base - t)
                    k += base
                }
                output.append(digitScalar(q))
                bias = adapt(delta, handled + 1, handled == basicCount)
                delta = 0
                handled += 1
            }
            delta += 1
            n += 1
        }
        return output
    }
}
