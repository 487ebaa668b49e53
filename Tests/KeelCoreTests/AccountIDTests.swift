import Foundation
import KeelCore
import Testing

/// Validates `raw` and returns the rejection, or nil when it was accepted.
private func rejection(of raw: String) -> AccountIDError? {
    do {
        _ = try AccountID(raw)
        return nil
    } catch {
        return error
    }
}

@Suite struct AccountIDTests {
    // MARK: - Rejection rules

    @Test func emptyIDIsRejected() {
        let error = rejection(of: "")
        #expect(error?.code == .empty)
        #expect(error?.value == "")
    }

    @Test(arguments: [" ", "   ", "\t", "\n", "\r\n", " \t\n ", "\u{00A0}", "\u{00A0}\u{00A0}", "\u{2003}", "\u{3000}"])
    func whitespaceOnlyIDIsRejected(raw: String) {
        #expect(rejection(of: raw)?.code == .whitespaceOnly)
    }

    @Test(arguments: [" bob", "bob ", " bob ", "\tbob", "bob\n", "\u{00A0}bob", "bob\u{00A0}", "bob\u{2028}"])
    func leadingOrTrailingWhitespaceIsRejected(raw: String) {
        #expect(rejection(of: raw)?.code == .surroundingWhitespace)
    }

    @Test(arguments: [
        "bob\0smith", "\0bob", "bob\0", "bob\tsmith", "bob\nsmith", "bob\u{07}", "bob\u{7F}", "bob\u{85}smith",
        "bob\u{2028}smith", "bob\u{2029}smith",
    ])
    func controlCharacterIsRejected(raw: String) {
        #expect(rejection(of: raw)?.code == .controlCharacter)
    }

    @Test func idOf255UTF8BytesIsAcceptedAnd256IsRejected() throws {
        #expect(AccountID.maximumUTF8Length == 255)

        let longest = String(repeating: "a", count: 255)
        #expect(try AccountID(longest).rawValue == longest)

        let tooLong = String(repeating: "a", count: 256)
        #expect(rejection(of: tooLong)?.code == .tooLong)
    }

    @Test func lengthLimitCountsUTF8BytesNotCharacters() throws {
        // "é" (U+00E9) is one Character but two bytes of UTF-8.
        let exactly255Bytes = String(repeating: "\u{00E9}", count: 127) + "a"
        #expect(exactly255Bytes.utf8.count == 255)
        #expect(try AccountID(exactly255Bytes).rawValue == exactly255Bytes)

        let twoHundredFiftySixBytes = String(repeating: "\u{00E9}", count: 128)
        #expect(twoHundredFiftySixBytes.count == 128)
        #expect(twoHundredFiftySixBytes.utf8.count == 256)
        #expect(rejection(of: twoHundredFiftySixBytes)?.code == .tooLong)
    }

    @Test(arguments: [
        "null", "NULL", "Null", "nil", "NIL", "Nil", "undefined", "UNDEFINED", "UnDeFiNeD", "none", "NONE", "None",
        "unknown", "UNKNOWN", "Unknown", "(null)", "(NULL)", "(Null)", "anonymous", "ANONYMOUS", "AnOnYmOuS",
    ])
    func placeholderIsRejectedInAnyLetterCase(raw: String) {
        #expect(rejection(of: raw)?.code == .placeholder)
    }

    @Test(arguments: [
        "00000000-0000-0000-0000-000000000000", "00000000000000000000000000000000",
        "{00000000-0000-0000-0000-000000000000}",
        "0", "00000000", "-1",
    ])
    func zeroAndMinusOneSentinelsAreRejectedAsPlaceholders(raw: String) {
        #expect(rejection(of: raw)?.code == .placeholder)
    }

    @Test(arguments: [
        "bob\u{200B}", "\u{200B}", "a\u{00AD}b", "\u{202E}evil", "x\u{2060}y", "\u{FEFF}bob", "\u{200D}bob",
        "bob\u{200C}", "b\u{200D}\u{200D}ob",
        // Found in review: invisible though not format characters (a Hangul filler, the blank Braille pattern,
        // the combining grapheme joiner), and a variation selector after a letter.
        "bob\u{3164}", "bo\u{2800}b", "bob\u{034F}", "bob\u{FE0F}", "\u{E0100}bob",
    ])
    func invisibleFormattingCharactersAreRejected(raw: String) {
        #expect(rejection(of: raw)?.code == .invisibleCharacter)
    }

    @Test func idsThatOnlyResemblePlaceholdersAreAccepted() throws {
        for raw in ["nullable", "nil-user", "anonymous1", "00000000-0000-0000-0000-000000000001", "10", "0-0", "-10"] {
            #expect(try AccountID(raw).rawValue == raw, "\(raw.debugDescription) should be accepted")
        }
    }

    // MARK: - Valid ids

    @Test(arguments: [
        "3F2504E0-4F89-11D3-9A0C-0305E82C3301", "3f2504e0-4f89-11d3-9a0c-0305e82c3301", "alice@example.com",
        "1234567890", "42", "Zoë", "ユーザー42", "пользователь", "👩‍💻-7", "Bob Smith", "love\u{2764}\u{FE0F}",
    ])
    func validIDIsAcceptedUnchanged(raw: String) throws {
        let id = try AccountID(raw)
        #expect(id.rawValue == raw)
        #expect(id.description == raw)
    }

    // MARK: - Equality

    @Test func canonicallyEquivalentIDsAreDifferentAccounts() throws {
        let precomposed = "caf\u{00E9}"
        let decomposed = "cafe\u{0301}"
        // Swift's String equality uses canonical equivalence, so it calls these equal ...
        #expect(precomposed == decomposed)
        #expect(precomposed.utf8.count != decomposed.utf8.count)

        // ... but as namespaces (file names, database keys) they are different bytes, so different accounts.
        let a = try AccountID(precomposed)
        let b = try AccountID(decomposed)
        #expect(a != b)
        #expect(a.hashValue != b.hashValue)

        let set: Set<AccountID> = [a, b]
        #expect(set.count == 2)
        #expect(set.contains(a))
        #expect(set.contains(b))
    }

    @Test func idsWithEqualBytesAreEqualAndHashEqually() throws {
        let a = try AccountID("alice@example.com")
        let b = try AccountID(String(decoding: Array("alice@example.com".utf8), as: UTF8.self))
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
        #expect(Set([a, b]).count == 1)
        #expect(try a != AccountID("Alice@example.com"))
    }

    // MARK: - Codable

    @Test func codableRoundTripKeepsTheRawValue() throws {
        let ids = try [AccountID("alice@example.com"), AccountID("caf\u{00E9}"), AccountID("cafe\u{0301}")]
        let data = try JSONEncoder().encode(ids)
        let decoded = try JSONDecoder().decode([AccountID].self, from: data)
        #expect(decoded == ids)
        #expect(decoded.map(\.rawValue.utf8.count) == ids.map(\.rawValue.utf8.count))
    }

    @Test func accountIDEncodesAsAPlainJSONString() throws {
        let data = try JSONEncoder().encode(try AccountID("12345"))
        #expect(String(decoding: data, as: UTF8.self) == "\"12345\"")
    }

    @Test func decodingAnInvalidIDThrowsDecodingError() throws {
        let json = Data("\"  \"".utf8)
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(AccountID.self, from: json)
        }

        do {
            _ = try JSONDecoder().decode(AccountID.self, from: json)
            Issue.record("decoding \"  \" should fail")
        } catch DecodingError.dataCorrupted(let context) {
            #expect(context.debugDescription.contains("whitespace"))
        }
    }

    @Test(arguments: ["\"\"", "\"null\"", "\"bob \"", "\"00000000-0000-0000-0000-000000000000\""])
    func decodingRejectsEveryInvalidForm(json: String) {
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(AccountID.self, from: Data(json.utf8))
        }
    }

    // MARK: - Error description

    @Test func errorDescriptionIsHumanReadableAndNamesTheProblem() throws {
        let cases: [(raw: String, code: AccountIDError.Code, mentions: [String])] = [
            ("", .empty, ["empty"]),
            ("   ", .whitespaceOnly, ["whitespace"]),
            ("bob ", .surroundingWhitespace, ["leading or trailing whitespace", "\"bob \""]),
            ("bob\0", .controlCharacter, ["control character", #""bob\u{0}""#]),
            // What the message is about is written out, not printed invisibly as "bob".
            ("bob\u{200B}", .invisibleCharacter, ["invisible formatting character", #""bob\u{200B}""#]),
            ("bob\u{3164}", .invisibleCharacter, [#""bob\u{3164}""#]),
            ("\u{FEFF}bob", .invisibleCharacter, [#""\u{FEFF}bob""#]),
            ("bo\"\u{2028}b", .controlCharacter, [#""bo\"\u{2028}b""#]),
            (String(repeating: "x", count: 300), .tooLong, ["300 bytes", "255"]),
            ("NULL", .placeholder, ["placeholder", "\"NULL\""]),
        ]
        for (raw, code, mentions) in cases {
            let error = try #require(rejection(of: raw))
            #expect(error.code == code)
            #expect(error.description.hasPrefix("account id"))
            #expect(!error.description.contains("AccountIDError"))
            for phrase in mentions {
                #expect(
                    error.description.contains(phrase), "\(error.description.debugDescription) should mention \(phrase)"
                )
            }
        }
    }

    @Test func errorDescriptionShortensALongValue() throws {
        let raw = String(repeating: "y", count: 100) + "\0"
        let error = try #require(rejection(of: raw))
        #expect(error.code == .controlCharacter)
        #expect(!error.description.contains(String(repeating: "y", count: 41)))
        #expect(error.description.contains("…"))
        #expect(error.value == raw)
    }
}
