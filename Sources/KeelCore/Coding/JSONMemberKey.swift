/// Any member name of a JSON object, so that a hand-writable file format can find the members it does not
/// know and refuse them: a misspelt optional member (`"retension"`) would otherwise read as absent, and the
/// file would mean something other than what its author wrote.
package struct JSONMemberKey: CodingKey {
    package var stringValue: String
    package var intValue: Int? { nil }
    package init(_ string: String) { stringValue = string }
    package init?(stringValue: String) { self.stringValue = stringValue }
    package init?(intValue: Int) { nil }

    /// Throws `DecodingError.dataCorrupted` naming the first member of `container` not in `allowed` (and
    /// listing those that are).
    package static func refuseUnknown(in container: KeyedDecodingContainer<Self>, allowed: [String]) throws {
        for key in container.allKeys where !allowed.contains(key.stringValue) {
            throw DecodingError.dataCorruptedError(
                forKey: key, in: container,
                debugDescription: "unknown member \"\(key.stringValue)\" (allowed: \(allowed.joined(separator: ", ")))")
        }
    }

    /// Refuses the members of the object `decoder` reads that are not in `allowed` (see
    /// ``refuseUnknown(in:allowed:)``).
    package static func refuseUnknown(in decoder: any Decoder, allowed: [String]) throws {
        try refuseUnknown(in: decoder.container(keyedBy: Self.self), allowed: allowed)
    }
}
