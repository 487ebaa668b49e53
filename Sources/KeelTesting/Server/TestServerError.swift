public import KeelCore

/// The test server could not start, or it was shut down while a test waited on it.
public struct TestServerError: KeelError {
    /// Codes of ``TestServerError``.
    public typealias Code = ErrorCode<TestServerError>

    /// What went wrong.
    public let code: Code
    /// A short explanation with the system's error.
    public let message: String

    /// An error with `code` and `message`.
    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    /// A developer-facing explanation, prefixed with `TestServer:`.
    public var description: String { "TestServer: \(message)" }
}

extension ErrorCode where Domain == TestServerError {
    /// The loopback socket could not be opened, bound or listened on.
    public static var cannotListen: Self { Self("cannotListen") }
    /// The server's internal wake-up pipe could not be created.
    public static var cannotStart: Self { Self("cannotStart") }
    /// The server was shut down while something waited on it.
    public static var shutDown: Self { Self("shutDown") }
}
