// libFuzzer target: the YAML reader and the OpenAPI loader on top of it (typed operation views included).
import KeelContractTools

/// libFuzzer calls this with each input; a crash, trap or leak is a finding.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzYAMLOpenAPI(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    _ = try? YAML.parse(bytes)
    guard let text = String(validating: bytes, as: UTF8.self),
        let document = try? OpenAPIDocument.parse(text, name: "fuzz.yaml")
    else { return 0 }
    for operation in (try? document.operations()) ?? [] {
        _ = operation.parameters
        _ = operation.responses
    }
    return 0
}
