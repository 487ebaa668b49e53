/// A value of an enum that the contract declares **extensible**: values the app does not know yet
/// decode to ``unknown(_:)`` with the raw string kept, instead of failing (MOB-API-001).
///
/// Declare the known cases as a plain string enum marked ``ExtensibleEnum`` and use `Extensible<...>`
/// as the property type:
///
/// ```swift
/// enum NoteKind: String, ExtensibleEnum { case text, checklist }
/// struct Note: Codable { var kind: Extensible<NoteKind> }
///
/// switch note.kind {
/// case .known(.text): ...
/// case .known(.checklist): ...
/// case .unknown(let raw): ...   // e.g. "drawing" from a newer server; the compiler makes you handle it
/// }
/// ```
///
/// An unknown value is never mapped to a known case, and encoding writes the raw string back unchanged,
/// so a value the app does not understand survives a round trip to the server.
public enum Extensible<Known: ExtensibleEnum>: Sendable, Hashable, CustomStringConvertible {
    /// A value declared in `Known`.
    case known(Known)
    /// A value `Known` does not declare, exactly as received.
    case unknown(String)

    /// `.known` when `Known` declares `rawValue`, otherwise `.unknown(rawValue)`.
    @inlinable
    public init(rawValue: String) {
        // Not `Known(rawValue:).map(Extensible.known) ?? …`: decoding reaches this through the generic
        // conformance, unspecialized, where the closure and the optional of `Extensible<Known>` each cost a
        // metadata lookup per value (decode.tolerant in keel-bench).
        // Exactly the declared value, not merely canonically equivalent to it (see `isExactly`): an
        // unknown value is kept as received, never mapped to a case and re-encoded differently.
        if let known = exactlyDeclared(Known.self, rawValue) {
            self = .known(known)
        } else {
            self = .unknown(rawValue)
        }
    }

    /// The wire value.
    @inlinable
    public var rawValue: String {
        switch self {
        case .known(let value): value.rawValue
        case .unknown(let raw): raw
        }
    }

    /// The known case, or nil for an unknown value.
    public var knownValue: Known? {
        if case .known(let value) = self { return value }
        return nil
    }

    /// Whether this is a value the app does not know.
    public var isUnknown: Bool { knownValue == nil }

    /// The raw value of a known case, or `unknown(raw)` for a value `Known` does not declare; for logs and debugging.
    public var description: String { isUnknown ? "unknown(\(rawValue))" : rawValue }
}

extension Extensible: Codable {
    // Inlinable so that decoding specializes for the app's enum instead of going through generics
    // (decode.tolerant in keel-bench).
    /// Decodes a string: `.known` when `Known` declares it, otherwise `.unknown` with the string kept.
    ///
    /// Traps when `Known` is also a ``ClosedEnum``: an undeclared value of a closed enum must fail, not fall back.
    ///
    /// - Throws: `DecodingError` when the value is not a string.
    @inlinable
    public init(from decoder: any Decoder) throws {
        Self.requireNotClosed()
        self.init(rawValue: try decoder.singleValueContainer().decode(String.self))
    }

    /// Traps when `Known` is also a ``ClosedEnum``: a closed enum must fail on an undeclared value, and
    /// wrapping it would silently turn that into `.unknown`. The contract decides which enums are
    /// extensible, not the model code. Free once specialized.
    @inlinable
    static func requireNotClosed() {
        precondition(
            !Known.isDeclaredClosed,
            "Extensible<\(Known.self)>: \(Known.self) is a ClosedEnum; an undeclared value of a closed enum must fail, not fall back"
        )
    }

    /// Encodes the wire value: the known case's raw value, or an unknown value exactly as it was received.
    @inlinable
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

/// The known cases of an enum the contract declares extensible. Use it through ``Extensible``.
public protocol ExtensibleEnum: RawRepresentable, CaseIterable, Sendable, Hashable where RawValue == String {
    /// Whether the type is also a ``ClosedEnum`` (a contradiction ``Extensible`` refuses). Provided by
    /// Keel; do not implement it. A requirement rather than a dynamic cast so that the check costs
    /// nothing per decoded value.
    static var isDeclaredClosed: Bool { get }
}

extension ExtensibleEnum {
    /// False: the type is only extensible.
    public static var isDeclaredClosed: Bool { false }
}

extension ExtensibleEnum where Self: ClosedEnum {
    /// True: the type declares itself closed as well.
    public static var isDeclaredClosed: Bool { true }
}
