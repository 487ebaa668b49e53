// libFuzzer target: SocketTransport's HTTP/1.1 response reader, fed what a hostile server could send,
// in pieces whose sizes the first byte chooses. Every input is a response within the limit or a typed failure.
import KeelHTTP

/// Serves the fuzz input in pieces, as a socket would.
private final class Pieces: ResponseByteSource {
    let bytes: [UInt8]
    let pieceSize: Int
    var offset = 0

    init(_ bytes: [UInt8], pieceSize: Int) {
        self.bytes = bytes
        self.pieceSize = pieceSize
    }

    func read(into buffer: inout [UInt8], deadline: ContinuousClock.Instant) throws(ClientSocket.Failure) -> Int {
        let count = min(pieceSize, buffer.count, bytes.count - offset)
        for index in 0..<count { buffer[index] = bytes[offset + index] }
        offset += count
        return count
    }
}

/// libFuzzer calls this with each input; a crash, trap or leak is a finding.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTPResponse(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    let source = Pieces(Array(input.dropFirst()), pieceSize: Int(input[0] % 64) + 1)
    var reader = ResponseReader(socket: source, deadline: .now + .seconds(60), maximumHeadBytes: 4096)
    let limit = 1024
    if let (response, _) = try? reader.read(method: input[0] & 0x80 == 0 ? "GET" : "HEAD", limit: limit) {
        precondition(response.body.count <= limit, "a body over the limit was returned")
        precondition((100...999).contains(response.status), "impossible status \(response.status)")
    }
    return 0
}
