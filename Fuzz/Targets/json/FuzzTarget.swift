// libFuzzer target: the strict JSON parser. Every input either parses or fails with a JSONParseError;
// what parses serializes and parses back to the same value.
import KeelContract

/// libFuzzer calls this with each input; a crash, trap or leak is a finding.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    guard let value = try? JSONValue(parsing: bytes) else { return 0 }
    let again = try? JSONValue(parsing: value.serialized())
    precondition(again == value, "serialized JSON did not parse back to the same value")
    return 0
}
