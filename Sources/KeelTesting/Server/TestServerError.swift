/// The test server could not start.
public struct TestServerError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public let message: String
    public var description: String { "TestServer: \(message)" }
}
