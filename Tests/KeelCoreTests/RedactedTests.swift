import Foundation
import KeelCore
import Testing

private let secret = "hunter2-s3cr3t"

private struct Credentials: Codable, Equatable {
    var user: String
    var token: Redacted<String>
}

@Suite struct RedactedTests {
    // MARK: - Every textual rendering hides the value

    @Test func descriptionAndDebugDescriptionShowThePlaceholder() {
        let value = Redacted(secret)
        #expect(value.description == "<redacted>")
        #expect(value.debugDescription == "<redacted>")
        #expect(Redacted<String>.placeholder == "<redacted>")
    }

    @Test func stringInterpolationHidesTheValue() {
        let value = Redacted(secret)
        let text = "token=\(value)"
        #expect(text == "token=<redacted>")
        #expect(!text.contains(secret))
    }

    @Test func stringDescribingAndReflectingHideTheValue() {
        let value = Redacted(secret)
        #expect(String(describing: value) == "<redacted>")
        #expect(String(reflecting: value) == "<redacted>")
    }

    @Test func printHidesTheValue() {
        var output = ""
        print(Redacted(secret), to: &output)
        debugPrint(Redacted(secret), to: &output)
        #expect(!output.contains(secret))
        #expect(output.contains("<redacted>"))
    }

    @Test func dumpHidesTheValue() {
        var output = ""
        dump(Redacted(secret), to: &output)
        #expect(!output.isEmpty)
        #expect(!output.contains(secret))
        #expect(!output.contains("unredacted"))
    }

    @Test func mirrorHasNoChildren() {
        let mirror = Mirror(reflecting: Redacted(secret))
        #expect(mirror.children.isEmpty)
        #expect(mirror.children.count == 0)
        #expect(mirror.displayStyle == .struct)
    }

    @Test func nonStringValuesAreHiddenToo() {
        let pin = Redacted(4711)
        #expect(String(describing: pin) == "<redacted>")
        #expect("\(pin)" == "<redacted>")
        var output = ""
        dump(pin, to: &output)
        #expect(!output.contains("4711"))
    }

    @Test func containersOfRedactedValuesHideThem() {
        let value = Redacted(secret)
        let renderings = [
            String(describing: [value]),
            String(describing: Optional(value)),
            String(describing: ["key": value]),
            String(reflecting: [value]),
            "\((value, 1))",
        ]
        for rendering in renderings {
            #expect(!rendering.contains(secret), "\(rendering) leaks the secret")
            #expect(rendering.contains("<redacted>"))
        }
    }

    @Test func structWithARedactedFieldDoesNotPrintTheSecret() {
        let credentials = Credentials(user: "bob", token: Redacted(secret))

        let described = String(describing: credentials)
        #expect(described.contains("bob"))  // the struct really was rendered field by field
        #expect(described.contains("<redacted>"))
        #expect(!described.contains(secret))

        #expect(!String(reflecting: credentials).contains(secret))
        #expect(!"\(credentials)".contains(secret))

        var dumped = ""
        dump(credentials, to: &dumped)
        #expect(dumped.contains("bob"))
        #expect(!dumped.contains(secret))
    }

    // MARK: - Access and transformation

    @Test func unredactedReturnsTheWrappedValue() {
        #expect(Redacted(secret).unredacted == secret)
    }

    @Test func mapTransformsTheValueAndKeepsItRedacted() {
        let upper = Redacted("abc").map { $0.uppercased() }
        #expect(upper.unredacted == "ABC")
        #expect(upper.description == "<redacted>")
        #expect(!String(reflecting: upper).contains("ABC"))

        let length: Redacted<Int> = Redacted(secret).map(\.count)
        #expect(length.unredacted == secret.count)
        #expect(String(describing: length) == "<redacted>")
    }

    @Test func mapRethrowsTheTransformsError() {
        struct Failure: Error {}
        #expect(throws: Failure.self) {
            try Redacted("abc").map { _ -> Int in throw Failure() }
        }
    }

    @Test func equalityAndHashingUseTheWrappedValue() {
        #expect(Redacted("a") == Redacted("a"))
        #expect(Redacted("a") != Redacted("b"))
        #expect(Set([Redacted("a"), Redacted("a"), Redacted("b")]).count == 2)
    }

    // MARK: - Codable writes the real value

    @Test func encodingWritesTheRawValue() throws {
        let data = try JSONEncoder().encode(Redacted("abc"))
        #expect(String(decoding: data, as: UTF8.self) == "\"abc\"")
    }

    @Test func decodingWrapsTheRawValue() throws {
        let decoded = try JSONDecoder().decode(Redacted<String>.self, from: Data("\"abc\"".utf8))
        #expect(decoded.unredacted == "abc")
    }

    @Test func structWithARedactedFieldRoundTripsThroughJSON() throws {
        let credentials = Credentials(user: "bob", token: Redacted(secret))
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let data = try encoder.encode(credentials)
        #expect(String(decoding: data, as: UTF8.self) == #"{"token":"\#(secret)","user":"bob"}"#)
        #expect(try JSONDecoder().decode(Credentials.self, from: data) == credentials)
    }
}
