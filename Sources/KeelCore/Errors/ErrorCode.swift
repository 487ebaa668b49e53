/// The `code` of a Keel error: a named member of an extensible set, one set per error type.
///
/// Every public Keel error is a struct with a `code` plus context. The codes of one error type are the
/// static members of `ErrorCode<ThatError>`, declared in a constrained extension next to the error:
///
/// ```swift
/// extension ErrorCode where Domain == DatabaseError {
///     /// Another connection holds a lock longer than the busy timeout.
///     public static var busy: Self { Self("busy") }
/// }
/// ```
///
/// Apps match codes, never message text: `if error.code == .busy { ... }`. The sets are extensible
/// (a later Keel release may add codes), so a `switch` over a code needs a `default`. The `Domain`
/// parameter keeps the sets apart: a `DatabaseError` code can't be compared with a `MigrationError` one.
/// Apps may declare codes for their own error types the same way.
///
/// ## Topics
/// - ``init(_:)``
/// - ``name``
/// - ``KeelError``
public struct ErrorCode<Domain>: Sendable, Hashable, CustomStringConvertible {
    /// The stable machine name of the code (`"busy"`), the same in every release; safe to log and to
    /// compare across processes (command-line JSON output uses it).
    public let name: String

    /// A code named `name`. Declare each code once, as a static member in a constrained extension.
    public init(_ name: String) { self.name = name }

    /// The code's ``name``.
    public var description: String { name }
}

extension ErrorCode: Codable {
    /// Encodes the ``name`` as a string (what journals and command-line JSON store).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(name)
    }

    /// Decodes a ``name``; a name this release does not declare is kept as it is (the set is extensible).
    public init(from decoder: any Decoder) throws {
        self.init(try decoder.singleValueContainer().decode(String.self))
    }
}

/// An error with a machine code from an extensible set, plus context (MOB-API-003: match codes, not text).
///
/// Conformers are structs whose ``code`` names what happened and whose other properties carry the
/// context (the file, the field, the underlying cause). `description` is for developers and logs; it
/// may contain local detail and is never meant for end users.
public protocol KeelError: Error, Sendable, CustomStringConvertible {
    /// What happened, as a member of this error type's code set.
    var code: ErrorCode<Self> { get }
}

extension KeelError {
    /// The code's stable name, for places that hold errors of several types (`any KeelError`).
    public var codeName: String { code.name }
}
