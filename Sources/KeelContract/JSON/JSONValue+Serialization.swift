extension JSONValue {
    /// Compact UTF-8 JSON text. Numbers are written as their original literal; member order is kept;
    /// strings escape only what JSON requires (quote, backslash, control characters).
    public func serialized() -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(256)
        write(to: &output)
        return output
    }

    fileprivate func write(to output: inout [UInt8]) {
        switch self {
        case .null: output.append(contentsOf: "null".utf8)
        case .bool(let value): output.append(contentsOf: (value ? "true" : "false").utf8)
        case .number(let number): output.append(contentsOf: number.literal.utf8)
        case .string(let string): Self.writeString(string, to: &output)
        case .array(let elements):
            output.append(UInt8(ascii: "["))
            for (position, element) in elements.enumerated() {
                if position > 0 { output.append(UInt8(ascii: ",")) }
                element.write(to: &output)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let object):
            output.append(UInt8(ascii: "{"))
            for (position, member) in object.enumerated() {
                Self.writeMemberName(member.key, first: position == 0, to: &output)
                member.value.write(to: &output)
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    /// An object member's name and colon, after a comma unless it is the `first` member.
    fileprivate static func writeMemberName(_ name: String, first: Bool, to output: inout [UInt8]) {
        if !first { output.append(UInt8(ascii: ",")) }
        writeString(name, to: &output)
        output.append(UInt8(ascii: ":"))
    }

    fileprivate static func writeString(_ string: String, to output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        var string = string
        string.withUTF8 { bytes in
            // Runs that need no escaping are copied at once; only quote, backslash and controls are rewritten.
            var runStart = 0
            for index in bytes.indices {
                let byte = bytes[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index]))
                switch byte {
                case UInt8(ascii: "\""): output += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
                case UInt8(ascii: "\\"): output += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
                case 0x0A: output += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
                case 0x0D: output += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
                case 0x09: output += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
                default:
                    let hex = String(byte, radix: 16)
                    output += Array(("\\u" + String(repeating: "0", count: 4 - hex.count) + hex).utf8)
                }
                runStart = index + 1
            }
            output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<bytes.count]))
        }
        output.append(UInt8(ascii: "\""))
    }
}

/// Writes one JSON object member by member: the bytes ``JSONValue/serialized()`` writes for an object of the
/// same members in the same order, without building the object first (no member list to allocate, no index
/// of its names to hash). For records written on every queued change (keel-bench outbox.enqueue).
///
/// The caller gives each name once: nothing checks for repeats.
package struct JSONObjectWriter {
    private var output: [UInt8] = []
    private var isEmpty = true

    /// An empty object, with room for `capacity` bytes.
    package init(capacity: Int = 256) {
        output.reserveCapacity(capacity)
        output.append(UInt8(ascii: "{"))
    }

    /// Adds `key: value`.
    package mutating func member(_ key: String, _ value: JSONValue) {
        name(key)
        value.write(to: &output)
    }

    /// Adds `key: "value"`.
    package mutating func member(_ key: String, string value: String) {
        name(key)
        JSONValue.writeString(value, to: &output)
    }

    /// Adds `key: value` for an integer, written as ``JSONNumber/init(_:)-(Int64)`` writes it.
    package mutating func member(_ key: String, integer value: Int64) {
        name(key)
        output.append(contentsOf: String(value).utf8)
    }

    /// The object's bytes.
    package consuming func finish() -> [UInt8] {
        output.append(UInt8(ascii: "}"))
        return output
    }

    private mutating func name(_ key: String) {
        JSONValue.writeMemberName(key, first: isEmpty, to: &output)
        isEmpty = false
    }
}
