import Foundation
import KeelContract

/// Where the contract puts machine-readable details in error bodies.
///
/// Default shape: `{"code": "maintenance", "errors": [{"field": "/title", "code": "tooLong"}]}`.
/// Only these machine codes are read; human text in the body is ignored (it must never reach users).
public struct ErrorBodyContract: Sendable {
    /// The member holding the machine error code.
    public var codeMember: String
    /// Codes that, on a 503, mean planned maintenance rather than a technical failure.
    public var maintenanceCodes: Set<String>
    /// Codes that, on a 409 to a keyed call, mean an earlier attempt with the same idempotency key is still
    /// being applied (``HTTPFailure/Kind/inProgress``) rather than a conflict of state.
    public var inProgressCodes: Set<String>
    /// The member holding the list of field errors.
    public var fieldErrorsMember: String
    /// Inside each field error: the member naming the field, and the one with its code.
    public var fieldMember: String
    /// Inside each field error: the member holding its machine code.
    public var fieldCodeMember: String

    /// Where the contract puts its error details; the defaults match the shape
    /// `{"code": ..., "errors": [{"field": ..., "code": ...}]}`, with `maintenance` as the maintenance code
    /// and `idempotency_key_in_progress` as the in-progress code.
    public init(
        codeMember: String = "code",
        maintenanceCodes: Set<String> = ["maintenance"],
        inProgressCodes: Set<String> = ["idempotency_key_in_progress"],
        fieldErrorsMember: String = "errors",
        fieldMember: String = "field",
        fieldCodeMember: String = "code"
    ) {
        self.codeMember = codeMember
        self.maintenanceCodes = maintenanceCodes
        self.inProgressCodes = inProgressCodes
        self.fieldErrorsMember = fieldErrorsMember
        self.fieldMember = fieldMember
        self.fieldCodeMember = fieldCodeMember
    }

    /// The machine code and field errors in `body`, when it is JSON of the contract's shape.
    func details(of body: Data) -> (code: String?, fields: [HTTPFailure.FieldError]) {
        guard !body.isEmpty, body.count <= 1 << 20, let value = try? JSONValue(parsing: body) else { return (nil, []) }
        let code = value[codeMember]?.stringValue
        var fields: [HTTPFailure.FieldError] = []
        if case .array(let entries) = value[fieldErrorsMember] ?? .null {
            for entry in entries {
                if let field = entry[fieldMember]?.stringValue, let fieldCode = entry[fieldCodeMember]?.stringValue {
                    fields.append(HTTPFailure.FieldError(field: field, code: fieldCode))
                }
            }
        }
        return (code, fields)
    }
}
