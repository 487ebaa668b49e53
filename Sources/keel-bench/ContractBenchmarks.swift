import Foundation
import KeelContract
import KeelSchema
import KeelCore

/// Benchmarks of the contract runtime (issue #3).
enum ContractBenchmarks {
    // MARK: - Fixture: about 1 MB of realistic notes

    enum NoteKind: String, ExtensibleEnum { case text, checklist, drawing }
    enum Visibility: String, ClosedEnum { case `private`, shared }

    /// The Keel model: an extensible enum, a closed enum, everything else plain.
    struct KeelNote: Codable {
        var id: Int
        var title: String
        var body: String
        var kind: Extensible<NoteKind>
        var visibility: Visibility
        var tags: [String]
        var createdAt: String
        var pinned: Bool
    }

    /// The same shape with the enums as plain strings: what `JSONDecoder` does without Keel.
    struct PlainNote: Codable {
        var id: Int
        var title: String
        var body: String
        var kind: String
        var visibility: String
        var tags: [String]
        var createdAt: String
        var pinned: Bool
    }

    /// A JSON array of notes of about `bytes` bytes; some kinds are unknown to the app, and every note
    /// carries members the app does not model (a newer server's additions).
    static func makeNotes(bytes: Int) -> Data {
        var generator = SeededGenerator(seed: 2026)
        let words = [
            "milk", "eggs", "plan", "trip", "call", "Anna", "review", "draft", "budget", "garden", "ideas", "read",
        ]
        let kinds = ["text", "checklist", "drawing", "voice", "table"]  // the last two are unknown to the app
        var notes: [String] = []
        var size = 2
        var id = 1
        while size < bytes {
            func phrase(_ count: Int) -> String {
                (0..<count).map { _ in words[Int(generator.next() % UInt64(words.count))] }.joined(separator: " ")
            }
            let tags = (0..<Int(generator.next() % 4)).map { _ in
                "\"\(words[Int(generator.next() % UInt64(words.count))])\""
            }
            let note = """
                {"id":\(id),"title":"\(phrase(3))","body":"\(phrase(24))","kind":"\(kinds[Int(generator.next() % 5)])",\
                "visibility":"\(generator.next() % 2 == 0 ? "private" : "shared")","tags":[\(tags.joined(separator: ","))],\
                "createdAt":"2026-11-\(10 + id % 20)T08:\(10 + id % 50):00Z","pinned":\(generator.next() % 7 == 0),\
                "revision":\(generator.next() % 1000),"meta":{"device":"ios","sync":{"etag":"W/\\"\(id)\\"","conflicts":[]}}}
                """
            notes.append(note)
            size += note.utf8.count + 1
            id += 1
        }
        return Data(("[" + notes.joined(separator: ",") + "]").utf8)
    }

    static let noteSchema: JSONValue = [
        "type": "array",
        "items": [
            "type": "object",
            "required": ["id", "title", "kind", "visibility", "createdAt"],
            "properties": [
                "id": ["type": "integer", "minimum": 1],
                "title": ["type": "string", "maxLength": 200],
                "body": ["type": "string"],
                "kind": ["type": "string"],
                "visibility": ["enum": ["private", "shared"]],
                "tags": ["type": "array", "items": ["type": "string"], "uniqueItems": false],
                "createdAt": ["type": "string", "format": "date-time"],
                "pinned": ["type": "boolean"],
                "revision": ["type": "integer"],
                "meta": ["type": "object"],
            ],
        ],
    ]

    // MARK: - Benchmarks

    static let decodeTolerant = Benchmark(
        name: "decode.tolerant",
        unit: "ms per 1 MB decode",
        goal: "ratio ≤ 1.10 (Keel models vs plain Codable with JSONDecoder)",
        operations: 3,
        prepare: {
            let data = makeNotes(bytes: 1_000_000)
            // Sanity: both decode the same number of notes, and some kinds really are unknown.
            let keel = try ContractDecoder().decode([KeelNote].self, from: data)
            let plain = try JSONDecoder().decode([PlainNote].self, from: data)
            guard keel.count == plain.count, keel.contains(where: { $0.kind.isUnknown }) else {
                throw BenchError("decode.tolerant fixture is not what it claims to be")
            }
            return Benchmark.Sides(
                baseline: { _ = try JSONDecoder().decode([PlainNote].self, from: data) },
                candidate: { _ = try ContractDecoder().decode([KeelNote].self, from: data) },
                teardown: {}
            )
        }
    )

    static let schemaValidate = Benchmark(
        name: "schema.validate",
        unit: "ms per 1 MB document",
        goal: "ratio ≤ 1.0 (validating vs parsing the same bytes to JSONValue; MB/s reported)",
        operations: 3,
        bytesPerOperation: 1_000_000,
        prepare: {
            let data = makeNotes(bytes: 1_000_000)
            let schema = try JSONSchema(noteSchema)
            let document = try JSONValue(parsing: data)
            guard schema.validate(document).isValid else { throw BenchError("schema.validate fixture is invalid") }
            return Benchmark.Sides(
                baseline: { _ = try JSONValue(parsing: data) },
                candidate: {
                    guard schema.validate(document).isValid else { throw BenchError("validation failed") }
                },
                teardown: {}
            )
        }
    )
}
