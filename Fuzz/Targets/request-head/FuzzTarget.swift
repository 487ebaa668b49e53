// libFuzzer target: the TestServer's request-head parser (what `keel serve` reads from any client).
// Every input is a head or a 4xx with a reason.
import KeelTesting

/// libFuzzer calls this with each input; a crash, trap or leak is a finding.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRequestHead(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    switch RequestHead.parse(bytes) {
    case .success(let head):
        precondition(head.contentLength >= 0, "negative Content-Length accepted")
        _ = head.wantsClose
        _ = head.expectsContinue
    case .failure(let failure):
        precondition((400...599).contains(failure.status), "a refusal must be an error status, not \(failure.status)")
    }
    return 0
}
