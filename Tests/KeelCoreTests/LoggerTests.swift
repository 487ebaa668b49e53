import KeelCore
import Testing

/// Collects every record a logger delivers.
private final class RecordCollector: Sendable {
    private let storage = Locked<[LogRecord]>([])

    var sink: Logger.Sink {
        { [storage] record in storage.withLock { $0.append(record) } }
    }

    var records: [LogRecord] { storage.withLock { $0 } }
}

/// Counts how often a message was rendered.
private final class EvaluationCounter: Sendable {
    private let count = Locked(0)

    func message(_ text: String) -> LogMessage {
        count.withLock { $0 += 1 }
        return LogMessage(stringLiteral: text)
    }

    var evaluations: Int { count.withLock { $0 } }
}

private struct UserName: CustomStringConvertible {
    var description: String
}

@Suite struct LoggerTests {
    // MARK: - Privacy of interpolations

    @Test func interpolatedStringsArePrivateByDefault() throws {
        let collector = RecordCollector()
        let logger = Logger(label: "test", sink: collector.sink)
        let email = "alice@example.com"
        let user = UserName(description: "Alice")

        logger.log(.info, "sync started for \(email) as \(user)")

        let record = try #require(collector.records.first)
        #expect(record.message == "sync started for <private> as <private>")
        #expect(!record.message.contains("alice"))
        #expect(!record.message.contains("Alice"))
    }

    @Test func publicPrivacyShowsTheValue() throws {
        let collector = RecordCollector()
        let logger = Logger(label: "test", sink: collector.sink)
        let route = "/v1/items"
        let user = UserName(description: "Alice")

        logger.log(.info, "GET \(route, privacy: .public) for \(user, privacy: .public) by \(user, privacy: .private)")

        #expect(collector.records.map(\.message) == ["GET /v1/items for Alice by <private>"])
    }

    @Test func integersBooleansAndFloatingPointNumbersAreShown() {
        let collector = RecordCollector()
        let logger = Logger(label: "test", sink: collector.sink)
        let count = 42
        let negative: Int64 = -7
        let byte: UInt8 = 255
        let fraction = 0.5
        let single: Float = 1.5
        let flag = true
        let other = false

        logger.log(.info, "count=\(count) negative=\(negative) byte=\(byte)")
        logger.log(.info, "fraction=\(fraction) single=\(single) flag=\(flag) other=\(other)")

        #expect(
            collector.records.map(\.message) == [
                "count=42 negative=-7 byte=255",
                "fraction=0.5 single=1.5 flag=true other=false",
            ])
    }

    @Test func redactedValuesAreRedactedEvenWhenMarkedPublic() {
        let collector = RecordCollector()
        let logger = Logger(label: "test", sink: collector.sink)
        let token = Redacted("hunter2-s3cr3t")
        let pin = Redacted(4711)

        logger.log(.info, "token \(token)")
        logger.log(.info, "token \(token, privacy: .public) pin \(pin, privacy: .public)")

        #expect(collector.records.map(\.message) == ["token <redacted>", "token <redacted> pin <redacted>"])
        #expect(!collector.records.contains { $0.message.contains("hunter2") || $0.message.contains("4711") })
    }

    @Test func plainLiteralsAreKeptVerbatim() {
        let message: LogMessage = "nothing to hide"
        #expect(message.rendered == "nothing to hide")
        #expect(message.description == "nothing to hide")
    }

    // MARK: - Levels

    @Test func recordsBelowTheMinimumLevelAreDroppedWithoutRenderingTheMessage() {
        let collector = RecordCollector()
        let counter = EvaluationCounter()
        let logger = Logger(label: "test", minimumLevel: .warning, sink: collector.sink)

        logger.log(.trace, counter.message("trace"))
        logger.log(.debug, counter.message("debug"))
        logger.log(.info, counter.message("info"))
        logger.log(.notice, counter.message("notice"))
        #expect(collector.records.isEmpty)
        #expect(counter.evaluations == 0)

        logger.log(.warning, counter.message("warning"))
        logger.log(.error, counter.message("error"))
        logger.log(.critical, counter.message("critical"))
        #expect(collector.records.map(\.message) == ["warning", "error", "critical"])
        #expect(collector.records.map(\.level) == [.warning, .error, .critical])
        #expect(counter.evaluations == 3)
    }

    @Test func defaultMinimumLevelIsInfo() {
        let collector = RecordCollector()
        let logger = Logger(label: "test", sink: collector.sink)
        #expect(logger.minimumLevel == .info)

        logger.log(.debug, "hidden")
        logger.log(.info, "shown")
        #expect(collector.records.map(\.message) == ["shown"])
    }

    @Test func isEnabledFollowsTheMinimumLevel() {
        let logger = Logger(label: "test", minimumLevel: .notice) { _ in }
        let enabled = LogLevel.allCases.filter { logger.isEnabled($0) }
        #expect(enabled == [.notice, .warning, .error, .critical])
    }

    @Test func levelsAreOrderedBySeverity() {
        #expect(LogLevel.allCases == [.trace, .debug, .info, .notice, .warning, .error, .critical])
        #expect(LogLevel.allCases.sorted() == LogLevel.allCases)
        #expect(LogLevel.trace < .critical)
        #expect(
            LogLevel.allCases.map(\.description) == [
                "trace", "debug", "info", "notice", "warning", "error", "critical",
            ])
    }

    // MARK: - Disabled logger

    @Test func disabledLoggerNeverRendersAndIsNeverEnabled() {
        let counter = EvaluationCounter()
        let logger = Logger.disabled

        for level in LogLevel.allCases {
            #expect(!logger.isEnabled(level))
            logger.log(level, counter.message("dropped"))
        }
        #expect(counter.evaluations == 0)

        // Deriving from it keeps it disabled.
        let derived = logger.named("keel.http").with(metadata: ["k": "v"])
        #expect(!derived.isEnabled(.critical))
        derived.log(.critical, counter.message("dropped"))
        #expect(counter.evaluations == 0)
    }

    // MARK: - Derived loggers

    @Test func namedKeepsTheSinkLevelAndMetadata() throws {
        let collector = RecordCollector()
        let logger = Logger(label: "keel", minimumLevel: .notice, metadata: ["app": "demo"], sink: collector.sink)
        let child = logger.named("keel.http")

        #expect(child.label == "keel.http")
        #expect(child.minimumLevel == .notice)
        #expect(child.metadata == ["app": "demo"])
        #expect(logger.label == "keel")

        child.log(.info, "dropped by the inherited level")
        child.log(.notice, "from child")
        logger.log(.notice, "from parent")

        #expect(collector.records.map(\.label) == ["keel.http", "keel"])
        #expect(collector.records.map(\.message) == ["from child", "from parent"])
        #expect(collector.records.allSatisfy { $0.metadata == ["app": "demo"] })
    }

    @Test func withMetadataKeepsTheSinkAndMergesMetadataWithCallMetadataWinning() throws {
        let collector = RecordCollector()
        let logger = Logger(label: "keel", metadata: ["app": "demo", "scope": "logger"], sink: collector.sink)
        let scoped = logger.with(metadata: ["scope": "operation", "correlation": "abc"])

        #expect(scoped.metadata == ["app": "demo", "scope": "operation", "correlation": "abc"])
        #expect(logger.metadata == ["app": "demo", "scope": "logger"])
        #expect(scoped.label == "keel")

        scoped.log(.info, "plain")
        scoped.log(.info, "overridden", metadata: ["correlation": "call", "attempt": "2"])
        logger.log(.info, "from the original")

        let records = collector.records
        try #require(records.count == 3)
        #expect(records[0].metadata == ["app": "demo", "scope": "operation", "correlation": "abc"])
        #expect(records[1].metadata == ["app": "demo", "scope": "operation", "correlation": "call", "attempt": "2"])
        #expect(records[2].metadata == ["app": "demo", "scope": "logger"])
    }

    // MARK: - Record contents

    @Test func recordCarriesLabelLevelFileAndLine() throws {
        let collector = RecordCollector()
        let logger = Logger(label: "keel.test", sink: collector.sink)

        let expectedLine = #line + 1
        logger.log(.error, "failed")

        let record = try #require(collector.records.first)
        #expect(record.label == "keel.test")
        #expect(record.level == .error)
        #expect(record.message == "failed")
        #expect(record.file == #fileID)
        #expect(record.file.hasSuffix("LoggerTests.swift"))
        #expect(record.line == expectedLine)
        #expect(record.metadata.isEmpty)
    }

    @Test func sinkReceivesOneRecordPerDeliveredCall() {
        let collector = RecordCollector()
        let logger = Logger(label: "test", sink: collector.sink)
        for index in 0..<5 { logger.log(.info, "message \(index)") }
        #expect(collector.records.map(\.message) == (0..<5).map { "message \($0)" })
    }
}
