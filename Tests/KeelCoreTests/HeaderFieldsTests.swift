import KeelCore
import Testing

/// The header list both the client and the test server use: names are RFC 9110 tokens, compared without
/// regard to ASCII case.
@Suite struct HeaderFieldsTests {
    /// Every byte, against RFC 9110 §5.6.2's own list: `tchar` is these 15 symbols, DIGIT and ALPHA.
    @Test func tokenBytesAreExactlyRFC9110sTchar() {
        let tchar = Set("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8)
        for byte in UInt8.min...UInt8.max {
            #expect(HeaderFields.isTokenByte(byte) == tchar.contains(byte), "byte \(byte)")
        }
        #expect(HeaderFields.isToken("X-Request-ID".utf8))
        #expect(!HeaderFields.isToken("".utf8))
        #expect(!HeaderFields.isToken("Bad Name".utf8))
        #expect(!HeaderFields.isToken("Name:".utf8))
        #expect(!HeaderFields.isToken("naïve".utf8))
    }

    @Test func namesMatchWithoutRegardToASCIICaseOnly() {
        var fields: HeaderFields = ["Content-Type": "application/json", "X-Trace": "a", "x-trace": "b"]
        fields.reserveCapacity(16)
        #expect(fields["content-type"] == "application/json")
        #expect(fields.values(for: "X-TRACE") == ["a", "b"])
        fields.removeAll(named: "X-Trace")
        #expect(fields.count == 1)
        // Only ASCII letters fold: the Kelvin sign is not a "K".
        #expect(!HeaderFields.equalIgnoringCase("\u{212A}eep", "Keep"))
        #expect(!HeaderFields.equalIgnoringCase("[", "{"))  // 0x5B and 0x7B differ only in the case bit
        // Names longer than a small string (their bytes on the heap) and small ones compare alike; a
        // difference in the last byte or in length is found.
        #expect(HeaderFields.equalIgnoringCase("X-Correlation-Identifier", "x-CORRELATION-identifier"))
        #expect(!HeaderFields.equalIgnoringCase("X-Correlation-Identifier", "X-Correlation-Identifies"))
        #expect(!HeaderFields.equalIgnoringCase("X-Trace", "X-Traces"))
        #expect(HeaderFields.equalIgnoringCase("", ""))
        // A name cut from a longer text, as a server reads it, compares by its own bytes.
        let line = "traceparent: 00-ab"
        let name = String(line[..<line.firstIndex(of: ":")!])
        #expect(HeaderFields.equalIgnoringCase(name, "TraceParent"))
        #expect(!HeaderFields.equalIgnoringCase(name, "TraceParenT-"))
    }

    /// Found in review: tokens were lower-cased with Unicode's rules, so `chun\u{212A}ed` (a Kelvin sign) was
    /// read as `chunked` — a coding no intermediary would recognize.
    @Test func tokensAreLowerCasedInASCIIOnly() {
        let fields: HeaderFields = ["Transfer-Encoding": "chun\u{212A}ed", "Connection": "Keep-Alive, UPGRADE"]
        #expect(fields.tokens(for: "transfer-encoding") == ["chun\u{212A}ed"])
        #expect(fields.tokens(for: "connection") == ["keep-alive", "upgrade"])
    }
}
