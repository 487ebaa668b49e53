/// A logger that forwards records to a sink the app supplies. Keel has no global logger.
///
/// Every Keel component that logs takes a `Logger` in its configuration; the default is
/// ``disabled``. The app connects Keel to its own logging (os.Logger, swift-log, a file) with one
/// closure. Messages are ``LogMessage`` values, whose interpolations are private by default, so a
/// record never carries personal data unless the call site marked it public.
///
/// ```swift
/// let logger = Logger(label: "com.example.app.keel") { record in
///     os_log("%{public}@", record.message)
/// }
/// logger.log(.info, "sync started for \(accountID)")   // account id renders as <private>
/// ```
public struct Logger: Sendable {
    /// Where records go. Called synchronously on the logging thread; keep it cheap and non-blocking.
    public typealias Sink = @Sendable (LogRecord) -> Void

    /// The subsystem or component name, e.g. `keel.http`.
    public let label: String
    /// Records below this level are dropped before their message is rendered.
    public let minimumLevel: LogLevel
    /// Metadata attached to every record of this logger.
    public let metadata: [String: String]
    private let sink: Sink?

    /// A logger named `label` that sends records at or above `minimumLevel` to `sink`.
    public init(label: String, minimumLevel: LogLevel = .info, metadata: [String: String] = [:], sink: @escaping Sink) {
        self.label = label
        self.minimumLevel = minimumLevel
        self.metadata = metadata
        self.sink = sink
    }

    private init(disabledWithLabel label: String) {
        self.label = label
        self.minimumLevel = .critical
        self.metadata = [:]
        self.sink = nil
    }

    /// A logger that drops everything (the default of every Keel component).
    public static let disabled = Logger(disabledWithLabel: "keel.disabled")

    /// Whether records at `level` reach the sink.
    public func isEnabled(_ level: LogLevel) -> Bool { sink != nil && level >= minimumLevel }

    /// A logger with the same sink and `label`, for a sub-component.
    public func named(_ label: String) -> Logger {
        guard let sink else { return self }
        return Logger(label: label, minimumLevel: minimumLevel, metadata: metadata, sink: sink)
    }

    /// A logger with the same sink that adds `metadata` (for example the correlation id) to every record.
    public func with(metadata extra: [String: String]) -> Logger {
        guard let sink else { return self }
        return Logger(label: label, minimumLevel: minimumLevel, metadata: metadata.merging(extra) { $1 }, sink: sink)
    }

    /// Sends `message` at `level`, if enabled. The message is rendered only when it will be delivered.
    public func log(
        _ level: LogLevel,
        _ message: @autoclosure () -> LogMessage,
        metadata extra: [String: String] = [:],
        file: String = #fileID,
        line: Int = #line
    ) {
        guard let sink, level >= minimumLevel else { return }
        let merged = extra.isEmpty ? metadata : metadata.merging(extra) { $1 }
        sink(
            LogRecord(label: label, level: level, message: message().rendered, metadata: merged, file: file, line: line)
        )
    }
}

/// The severity of a ``LogRecord``.
public enum LogLevel: Int, Sendable, Comparable, CaseIterable, CustomStringConvertible {
    case trace, debug, info, notice, warning, error, critical

    /// Orders levels by severity, from `trace` (lowest) to `critical` (highest).
    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The level's name in lowercase, e.g. `warning`.
    public var description: String {
        switch self {
        case .trace: "trace"
        case .debug: "debug"
        case .info: "info"
        case .notice: "notice"
        case .warning: "warning"
        case .error: "error"
        case .critical: "critical"
        }
    }
}

/// One delivered log record. Its message is already rendered with private values masked.
public struct LogRecord: Sendable, Equatable {
    /// The logger's label.
    public var label: String
    /// The severity.
    public var level: LogLevel
    /// The rendered message; private interpolations show as `<private>`, redacted values as `<redacted>`.
    public var message: String
    /// Logger metadata merged with the call's metadata.
    public var metadata: [String: String]
    /// The source file (`#fileID`) of the call.
    public var file: String
    /// The source line of the call.
    public var line: Int
}

/// A log message whose interpolated values are private unless marked otherwise.
///
/// - `\(value)` renders as `<private>` for strings and other describable values;
/// - `\(value, privacy: .public)` renders the value;
/// - integers, floating-point numbers and booleans are public (they are counts, durations, flags);
/// - a ``Redacted`` value always renders as `<redacted>`, even when marked public.
public struct LogMessage: ExpressibleByStringInterpolation, Sendable, Equatable, CustomStringConvertible {
    /// The message text with private values masked.
    public let rendered: String

    /// A message of literal text only; nothing is masked.
    public init(stringLiteral value: String) { rendered = value }
    /// A message built from an interpolation, with each interpolated value rendered or masked by its privacy.
    public init(stringInterpolation: StringInterpolation) { rendered = stringInterpolation.text }

    /// The rendered message, with private values already masked.
    public var description: String { rendered }

    /// Builds a ``LogMessage``; see the type's documentation for the privacy of each interpolation.
    public struct StringInterpolation: StringInterpolationProtocol {
        fileprivate var text = ""

        /// An empty interpolation with room reserved for the literal text and the interpolated values.
        public init(literalCapacity: Int, interpolationCount: Int) {
            text.reserveCapacity(literalCapacity + interpolationCount * 9)
        }

        /// Appends literal text as written.
        public mutating func appendLiteral(_ literal: String) { text += literal }

        /// Appends `value` when `privacy` is `.public`, otherwise `<private>`.
        public mutating func appendInterpolation(_ value: some CustomStringConvertible, privacy: LogPrivacy = .private)
        {
            text += privacy == .public ? value.description : LogPrivacy.privatePlaceholder
        }

        /// Appends an integer (public: counts and codes are not personal data).
        public mutating func appendInterpolation(_ value: some BinaryInteger) { text += String(describing: value) }
        /// Appends a floating-point number (public).
        public mutating func appendInterpolation(_ value: some BinaryFloatingPoint) {
            text += String(describing: Double(value))
        }
        /// Appends `true` or `false` (public).
        public mutating func appendInterpolation(_ value: Bool) { text += value ? "true" : "false" }

        /// Appends `<redacted>`, whatever `privacy` says.
        public mutating func appendInterpolation<Value>(_ value: Redacted<Value>, privacy: LogPrivacy = .private) {
            text += Redacted<Value>.placeholder
        }
    }
}

/// Whether an interpolated value may appear in a log record.
public enum LogPrivacy: Sendable, Equatable {
    /// Rendered as `<private>`.
    case `private`
    /// Rendered as its description.
    case `public`

    static let privatePlaceholder = "<private>"
}
