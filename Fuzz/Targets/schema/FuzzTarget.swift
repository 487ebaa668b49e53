// libFuzzer target: JSON Schema compilation and validation. The input is split at the first NUL byte
// (or in the middle): the first part is the schema, the second the instance.
import KeelContract
import KeelSchema

/// Compiles one schema before fuzzing starts, so that the validator's one-time globals (the draft
/// 2020-12 metaschemas, parsed on first use and kept for the process) are not reported as a leak of
/// the first input that happens to touch them.
@_cdecl("LLVMFuzzerInitialize")
public func initializeSchemaFuzzing(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>
) -> CInt {
    _ = try? JSONSchema(["type": "object"], checksMetaschema: true)
    return 0
}

/// libFuzzer calls this with each input; a crash, trap or leak is a finding.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSchema(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let split = bytes.firstIndex(of: 0) ?? bytes.count / 2
    guard let schemaValue = try? JSONValue(parsing: bytes[..<split]),
        let schema = try? JSONSchema(schemaValue, checksMetaschema: split % 2 == 0)
    else { return 0 }
    let rest = bytes[min(split + 1, bytes.count)...]
    guard let instance = try? JSONValue(parsing: rest) else { return 0 }
    let plain = schema.validate(instance)
    let asserted = schema.validate(instance, options: ValidationOptions(formatAssertion: true, openAPINullable: true))
    // Asserting formats can only add errors where the instance was valid without them... unless
    // openAPINullable accepts a null; so only check determinism here.
    precondition(schema.validate(instance) == plain, "validation is not deterministic")
    _ = asserted
    return 0
}
