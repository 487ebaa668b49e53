// libFuzzer target: Retry-After and HTTP-date parsing. Whatever the header says, the delay is nil or
// between zero and a day.
import Foundation
import KeelHTTP

/// libFuzzer calls this with each input; a crash, trap or leak is a finding.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTPDate(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    let now = Date(timeIntervalSince1970: 1_796_126_400)
    _ = HTTPDate.parse(text, now: now)
    if let delay = RetryAfter.delay(from: text, now: now) {
        precondition(delay >= .zero && delay <= RetryAfter.maximumDelay, "Retry-After delay out of range: \(delay)")
    }
    return 0
}
