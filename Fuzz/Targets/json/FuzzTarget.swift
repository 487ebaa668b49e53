// libFuzzer target: the strict JSON parser and the contract decoder on top of it. Every input either
// parses or fails with a JSONParseError; what parses serializes and parses back to the same value, and
// decoding a model from it ends in the model or a ContractDecodingError, never a trap.
import Foundation
import KeelContract

/// Members of every kind the decoder reads specially (exact integers of each width, floating point,
/// Decimal, dates, Base64, URLs, nested arrays and maps, a raw value), all optional so that most inputs
/// get past the first member.
private struct Model: Decodable {
    var int: Int?
    var small: UInt8?
    var wide: Int64?
    var double: Double?
    var float: Float?
    var decimal: Decimal?
    var at: Date?
    var blob: Data?
    var link: URL?
    var flag: Bool?
    var text: String?
    var list: [Int]?
    var map: [String: [Double]]?
    var raw: JSONValue?
    var child: [Model]?
}

/// libFuzzer calls this with each input; a crash, trap or leak is a finding.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    guard let value = try? JSONValue(parsing: bytes) else { return 0 }
    let again = try? JSONValue(parsing: value.serialized())
    precondition(again == value, "serialized JSON did not parse back to the same value")
    _ = try? ContractDecoder().decode(Model.self, from: value)
    _ = try? ContractDecoder().decode([Model].self, from: value)
    return 0
}
