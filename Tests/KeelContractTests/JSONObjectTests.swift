import KeelContract
import Testing

/// `JSONObject`: document order, O(1) lookup, JSON's notion of member identity and equality.
@Suite struct JSONObjectTests {
    @Test func membersKeepDocumentOrderAndReplacingKeepsThePosition() {
        var object: JSONObject = ["b": 1, "a": 2, "c": 3]
        object["a"] = 20
        object["d"] = 4
        #expect(object.keys == ["b", "a", "c", "d"])
        #expect(object.map(\.value) == [1, 20, 3, 4])
        #expect(object["a"] == 20)
    }

    @Test func removingAMemberKeepsTheOthersInOrderAndFindable() {
        var object: JSONObject = ["a": 1, "b": 2, "c": 3, "d": 4]
        object["b"] = nil
        #expect(object.keys == ["a", "c", "d"])
        #expect(object["b"] == nil)
        #expect(object["c"] == 3 && object["d"] == 4 && object["a"] == 1)
        object["b"] = 5  // comes back at the end
        object["a"] = nil
        #expect(object.keys == ["c", "d", "b"])
        #expect(object.map(\.value) == [3, 4, 5])
        #expect(object["b"] == 5 && object["d"] == 4)
        object["missing"] = nil
        #expect(object.count == 3)
    }

    @Test func equalityAndHashIgnoreOrder() {
        let one: JSONObject = ["a": 1, "b": ["x": true]]
        let other: JSONObject = ["b": ["x": true], "a": 1]
        #expect(one == other)
        #expect(one.hashValue == other.hashValue)
        #expect(Set([JSONValue.object(one), .object(other)]).count == 1)
        #expect(one != ["a": 1, "b": ["x": false]])
        #expect(one != ["a": 1])
        #expect(one != ["a": 1, "c": ["x": true]])
    }

    @Test func namesAreComparedByCodePoints() {
        // "é" precomposed and decomposed are equal Swift strings but different JSON member names.
        var object = JSONObject()
        object["\u{E9}"] = 1
        object["e\u{301}"] = 2
        #expect(object.count == 2)
        #expect(object["\u{E9}"] == 1)
        #expect(object["e\u{301}"] == 2)
        object["\u{E9}"] = nil
        #expect(object.keys.map { Array($0.unicodeScalars) } == [["e", "\u{301}"]])
        #expect(object["e\u{301}"] == 2)
    }

    @Test func largeObjectsKeepOrderLookupRemovalAndEquality() {
        // Past a dozen members an object is indexed by hash: the same behaviour as a small one.
        var object = JSONObject()
        for index in 0..<40 { object["k\(index)"] = .number(JSONNumber(Int64(index))) }
        #expect(object.count == 40)
        #expect(object["k0"] == 0 && object["k39"] == 39 && object["k40"] == nil)
        object["k5"] = nil
        #expect(object.count == 39 && object["k5"] == nil && object["k6"] == 6 && object["k39"] == 39)
        #expect(object.keys.prefix(6) == ["k0", "k1", "k2", "k3", "k4", "k6"])
        object["k5"] = 50
        #expect(object.keys.last == "k5" && object["k5"] == 50)
        let reversed = JSONObject(object.reversed().map { ($0.key, $0.value) })
        #expect(reversed == object && reversed.hashValue == object.hashValue)
        var other = reversed
        other["k20"] = 21
        #expect(other != object)
        // Down to a small object again: still found.
        for index in 0..<40 where index != 3 { object["k\(index)"] = nil }
        #expect(object.keys == ["k3"] && object["k3"] == 3)
    }
}

/// Reading values out of a `JSONValue` without a `switch` (found in an outside audit: only `stringValue`
/// existed, so every app wrote its own accessors). Each is nil for any other kind of value; a number is an
/// `Int` only when it is exactly one.
@Suite struct JSONValueAccessorTests {
    @Test func eachAccessorReadsItsKindAndNothingElse() throws {
        let value = try JSONValue(
            parsing:
                #"{"b": true, "i": 2.0e0, "f": 2.5, "big": 1e30, "a": [1, "x"], "o": {"k": null}, "n": null, "s": "t"}"#
        )
        #expect(value["b"]?.boolValue == true && value["s"]?.boolValue == nil)
        #expect(value["i"]?.intValue == 2 && value["f"]?.intValue == nil && value["big"]?.intValue == nil)
        #expect(value["s"]?.intValue == nil && value["b"]?.intValue == nil)
        #expect(value["f"]?.doubleValue == 2.5 && value["s"]?.doubleValue == nil)
        #expect(value["a"]?.arrayValue == [1, "x"] && value["o"]?.arrayValue == nil)
        #expect(value["o"]?.objectValue?["k"] == .null && value["a"]?.objectValue == nil)
        #expect(value["n"]?.isNull == true && value["o"]?["k"]?.isNull == true && value["s"]?.isNull == false)
    }
}
