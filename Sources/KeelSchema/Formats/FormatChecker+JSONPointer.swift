import Foundation

// MARK: - RFC 6901 json-pointer, relative-json-pointer

extension FormatChecker {
    /// Empty, or `/`-prefixed reference tokens in which every `~` is followed by `0` or `1`.
    static func isJSONPointer(_ pointer: ArraySlice<Unicode.Scalar>) -> Bool {
        guard let first = pointer.first else { return true }
        guard first == "/" else { return false }
        var index = pointer.startIndex
        while index < pointer.endIndex {
            if pointer[index] == "~" {
                guard index + 1 < pointer.endIndex, pointer[index + 1] == "0" || pointer[index + 1] == "1" else {
                    return false
                }
                index += 1
            }
            index += 1
        }
        return true
    }

    /// A non-negative integer without leading zeros, followed by `#` or a JSON pointer
    /// (draft-bhutton-relative-json-pointer-00 §3).
    static func isRelativeJSONPointer(_ value: String) -> Bool {
        let scalars = Array(value.unicodeScalars)
        let digitCount = scalars.prefix(while: isDigit).count
        guard digitCount > 0, digitCount == 1 || scalars[0] != "0" else { return false }
        let rest = scalars[digitCount...]
        return rest.elementsEqual(["#"]) || isJSONPointer(rest)
    }
}
