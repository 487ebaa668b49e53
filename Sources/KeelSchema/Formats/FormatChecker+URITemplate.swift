import Foundation

// MARK: - RFC 6570 uri-template

extension FormatChecker {
    /// RFC 6570 §2 syntax: literals (with the erratum admitting `'`) and `{operator varspec,...}` expressions.
    static func isURITemplate(_ value: String) -> Bool {
        let scalars = Array(value.unicodeScalars)
        var index = 0
        while index < scalars.count {
            let scalar = scalars[index]
            switch scalar.value {
            case 0x7B:  // "{"
                guard let close = scalars[index...].firstIndex(of: "}"),
                    isTemplateExpression(scalars[(index + 1)..<close])
                else { return false }
                index = close + 1
            case 0x25:  // "%"
                guard index + 2 < scalars.count, isHex(scalars[index + 1]), isHex(scalars[index + 2]) else {
                    return false
                }
                index += 3
            case 0x21, 0x23, 0x24, 0x26...0x3B, 0x3D, 0x3F...0x5B, 0x5D, 0x5F, 0x61...0x7A, 0x7E:
                index += 1
            default:
                guard isUCSChar(scalar) || isPrivateUse(scalar) else { return false }
                index += 1
            }
        }
        return true
    }

    /// `[ operator ] variable-list` between the braces.
    private static func isTemplateExpression(_ expression: ArraySlice<Unicode.Scalar>) -> Bool {
        var list = expression
        if let first = list.first, "+#./;?&=,!@|".unicodeScalars.contains(first) { list = list.dropFirst() }
        guard !list.isEmpty else { return false }
        return list.split(separator: ",", omittingEmptySubsequences: false).allSatisfy(isVarspec)
    }

    /// `varname [ ":" max-length / "*" ]`, where `varname = varchar *( ["."] varchar )`.
    private static func isVarspec(_ varspec: ArraySlice<Unicode.Scalar>) -> Bool {
        var index = varspec.startIndex
        var previousWasDot = true  // a name may not start with a dot
        var nameLength = 0
        scan: while index < varspec.endIndex {
            let scalar = varspec[index]
            switch scalar {
            case "%":
                guard index + 2 < varspec.endIndex, isHex(varspec[index + 1]), isHex(varspec[index + 2]) else {
                    return false
                }
                index += 3
                previousWasDot = false
            case ".":
                guard !previousWasDot else { return false }
                index += 1
                previousWasDot = true
            case "_":
                index += 1
                previousWasDot = false
            default:
                guard isAlpha(scalar) || isDigit(scalar) else { break scan }
                index += 1
                previousWasDot = false
            }
            nameLength += 1
        }
        guard nameLength > 0, !previousWasDot else { return false }
        let modifier = varspec[index...]
        if modifier.isEmpty || modifier.elementsEqual(["*"]) { return true }
        // `max-length = %x31-39 0*3DIGIT`: 1 to 9999 without leading zeros.
        guard modifier.first == ":" else { return false }
        let length = modifier.dropFirst()
        return (1...4).contains(length.count) && length.first != "0" && length.allSatisfy(isDigit)
    }
}
