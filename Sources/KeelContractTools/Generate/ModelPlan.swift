import Foundation
import KeelContract

/// A Swift type the generator declares, before it is text.
struct TypePlan {
    enum Kind {
        /// A struct with explicit coding: required members must be present, optional ones may be missing.
        case structure([PropertyPlan])
        /// A string enum whose undeclared values fail to decode (``ClosedEnum``).
        case closedEnum([EnumCasePlan])
        /// The known values of an extensible enum, used as `Extensible<Name>` (``ExtensibleEnum``).
        case extensibleEnum([EnumCasePlan])
        /// `oneOf` with a discriminator: an enum with one case per variant schema.
        case union(discriminator: String, variants: [VariantPlan])
        /// `oneOf`/`anyOf` without a discriminator whose variants are told apart by JSON kind (and objects
        /// by which of their disjoint required members are present): an enum with one case per variant.
        case kindUnion([KindVariantPlan])
        /// Anything else with a name in the contract: `typealias Name = [String]`.
        case alias(TypeUse)
    }

    /// The full name from the top level, e.g. `["Note", "Attachment"]`.
    var path: [String]
    var kind: Kind
    var documentation: [String]
    var nested: [TypePlan] = []
    /// Where the schema is (for diagnostics): the file relative to the description, and a JSON pointer.
    var file: String
    var location: String

    var name: String { path[path.count - 1] }
}

/// How a declaration refers to a type.
indirect enum TypeUse: Equatable {
    case declared([String])
    /// `Extensible<Known>` for the known values declared at the path.
    case extensible([String])
    case builtin(Builtin)
    case array(TypeUse)
    case dictionary(TypeUse)
    /// An element that may be null inside an array or dictionary.
    case optional(TypeUse)
}

/// The library types generated code uses for schema types.
enum Builtin: String, CaseIterable {
    case string = "String", date = "Date", int = "Int", int32 = "Int32", int64 = "Int64", double = "Double", float =
        "Float"
    case int8 = "Int8", int16 = "Int16", uint8 = "UInt8", uint16 = "UInt16", uint32 = "UInt32", uint64 = "UInt64"
    case decimal = "Decimal"
    case bool = "Bool", json = "JSONValue"

    /// The Swift integer type of an `integer` schema's `format` (the OpenAPI format registry's sized
    /// integers); `Int` for none or one it does not know.
    static func integer(format: String?) -> Builtin {
        switch format {
        case "int8": .int8
        case "int16": .int16
        case "int32": .int32
        case "int64": .int64
        case "uint8": .uint8
        case "uint16": .uint16
        case "uint32": .uint32
        case "uint64": .uint64
        default: .int
        }
    }

    /// The Swift type of a `number` schema's `format`: `Decimal` for `decimal`/`decimal128` (an amount of money
    /// read as `Double` would not be the amount the server sent), `Float` for `float`, otherwise `Double`.
    static func number(format: String?) -> Builtin {
        switch format {
        case "decimal", "decimal128": .decimal
        case "float": .float
        default: .double
        }
    }

    /// Whether the type holds whole numbers only.
    var isInteger: Bool { [.int, .int8, .int16, .int32, .int64, .uint8, .uint16, .uint32, .uint64].contains(self) }
}

struct PropertyPlan {
    /// The member name on the wire.
    var wireName: String
    var swiftName: String
    var type: TypeUse
    var required: Bool
    var nullable: Bool
    var documentation: [String]
    /// A boolean marker's one allowed value (`deleted: {type: boolean, enum: [true]}`): checked on decoding.
    var marker: Bool? = nil
}

struct EnumCasePlan {
    var swiftName: String
    /// The value on the wire: a string, or an integer's digits when ``integer``.
    var rawValue: String
    /// An integer enum's case (`ClosedIntegerEnum`).
    var integer = false
}

struct VariantPlan {
    var swiftName: String
    /// The discriminator values that select this variant.
    var values: [String]
    var type: TypeUse
}

struct KindVariantPlan {
    var swiftName: String
    var kind: JSONKind
    var type: TypeUse
    /// For object variants beside other object variants: the required members that select this one.
    var required: [String]
}

/// Something in the contract the generator cannot turn into correct Swift (yet).
public struct ContractGenerationDiagnostic: Sendable, Equatable, CustomStringConvertible {
    /// The file.
    public var file: String
    /// A JSON pointer fragment into it: `#/components/schemas/Shape`.
    public var location: String
    /// What the generator does not support there (for example a struct that contains itself by value).
    public var message: String
    /// One line: control characters in names (a member called "a\nb") are escaped.
    public var description: String {
        func oneLine(_ text: String) -> String {
            text.unicodeScalars.map {
                $0.properties.generalCategory == .control ? "\\u{\(String($0.value, radix: 16))}" : String($0)
            }.joined()
        }
        return "\(oneLine(file)) \(oneLine(location)): \(message)"
    }
}
