import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What one request to a `keel serve` child answered: a response, or the URLError code.
struct Fetched {
    var status: Int?
    var headers: [AnyHashable: Any] = [:]
    var body = Data()
    var errorCode: URLError.Code?

    var text: String { String(decoding: body, as: UTF8.self) }
}

/// GETs `url` with a fresh ephemeral session (no connection shared with other tests).
func fetch(_ url: URL, timeout: Double = 5) async -> Fetched {
    let configuration = URLSessionConfiguration.ephemeral
    configuration.timeoutIntervalForRequest = timeout
    let session = URLSession(configuration: configuration)
    defer { session.finishTasksAndInvalidate() }
    do {
        let (data, response) = try await session.data(from: url)
        let http = response as? HTTPURLResponse
        return Fetched(status: http?.statusCode, headers: http?.allHeaderFields ?? [:], body: data)
    } catch let error as URLError {
        return Fetched(errorCode: error.code)
    } catch {
        return Fetched()
    }
}
