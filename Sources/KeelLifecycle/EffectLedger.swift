public import Foundation
public import KeelCore
import KeelStore

/// The durable record of irreversible operations started from navigation — publish, pay, send
/// (MOB-PLAT-008, MOB-PLAT-005): an operation gets its id when the user confirms, is recorded here before
/// it runs, and back, restoration, a re-render replaying the same confirmation, and a relaunch never start
/// it again. Its result is read from here (and, for network operations, from the HTTP operation journal
/// named by ``Entry/reference``), never from view state.
///
/// ```swift
/// let id = EffectLedger.operationID(entry: entry.id, action: "publish")   // the same on every replay
/// switch try await ledger.begin(id, action: "publish") {
/// case .run: let result = try await publish(); try await ledger.complete(id, .succeeded, result: result)
/// case .recorded(let entry): show(entry)                                   // never run twice
/// }
/// ```
///
/// The ledger is one small JSON file, rewritten atomically and synced before each call returns (the same
/// durable write as vault manifests and key files).
public actor EffectLedger {
    /// Where an operation stands.
    public enum State: String, Sendable, Codable, Hashable {
        /// Recorded and started; its outcome is not known yet (or the process died before it was).
        case started
        /// It completed.
        case succeeded
        /// It failed for certain (nothing was done).
        case failed
    }

    /// One operation.
    public struct Entry: Sendable, Codable, Hashable {
        /// Its id.
        public var id: String
        /// What it does (`publish`).
        public var action: String
        /// Where it stands.
        public var state: State
        /// What the user is shown as its result (`published as #42`).
        public var result: String?
        /// The HTTP operation journal's id for it, when it is a network operation.
        public var reference: String?
        /// The account that started it (nil: not recorded — a ledger written before owners were, or an
        /// operation of nobody signed in).
        public var account: String?
        /// When it was settled (``complete(_:_:result:)``), by the ledger's clock; nil while it is not, and
        /// for entries a ledger wrote before it kept the time.
        public var settledAt: Date?
    }

    /// What ``begin(_:action:reference:)`` decided.
    public enum Begin: Sendable, Hashable {
        /// Newly recorded: run it now.
        case run
        /// Already recorded (a replay, a restore, a relaunch): do not run it; this is what is known.
        case recorded(Entry)
    }

    /// The ledger file.
    public nonisolated let file: URL
    private let clock: WallClock
    private var entries: [String: Entry]
    /// Held for the ledger's life on `<file>.lock`: the ledger is read once and rewritten whole, so a
    /// second ledger on the same file (an app extension, a second instance) would drop this one's entries
    /// and let an operation run twice.
    private let lock: ExclusiveFileLock

    /// The ledger in `file` (created on first write).
    ///
    /// - Throws: ``EffectLedgerError`` `damaged` when the file exists but is not a ledger: it is never
    ///   replaced, since it is the only thing preventing a second payment; `inUse` while another ledger
    ///   (another process, or another instance in this one) has the same file.
    public init(file: URL, clock: WallClock = .system) throws {
        self.file = file
        self.clock = clock
        do { lock = try ExclusiveFileLock(file.path + ".lock", .file) } catch {
            switch error {
            case .held:
                throw EffectLedgerError(
                    code: .inUse, message: "\(file.path) is in use by another effect ledger (another process?)")
            case .failed(let code):
                throw EffectLedgerError(
                    code: .ioError, message: "cannot lock \(file.path).lock: \(String(cString: strerror(code)))")
            }
        }
        let bytes: [UInt8]
        do { bytes = try DurableFiles.read(file.path, limit: 64 << 20) } catch {
            // Only a ledger that does not exist is empty: one that cannot be read must not look empty.
            guard error.isNotFound else { throw EffectLedgerError(code: .ioError, message: error.description) }
            entries = [:]
            return
        }
        do {
            let list = try JSONDecoder().decode([Entry].self, from: Data(bytes))
            entries = Dictionary(list.map { ($0.id, $0) }, uniquingKeysWith: { _, last in last })
        } catch {
            throw EffectLedgerError(code: .damaged, message: "\(file.path) is not an effect ledger: \(error)")
        }
    }

    /// The id of `action` confirmed on navigation entry `entry`: the same every time that confirmation is
    /// replayed or restored (entry ids survive snapshots), different for another entry or `attempt`.
    public static func operationID(entry: String, action: String, attempt: Int = 1) -> String {
        "\(action)@\(entry)#\(attempt)"
    }

    /// Records `id` before it runs, or returns what is already known about it.
    ///
    /// - Parameter account: the account starting it; ``unsettled(account:)`` then hands it back only in that
    ///   account's session (one ledger for all accounts of the device).
    public func begin(_ id: String, action: String, reference: String? = nil, account: String? = nil) throws -> Begin {
        if let existing = entries[id] { return .recorded(existing) }
        entries[id] = Entry(
            id: id, action: action, state: .started, result: nil, reference: reference, account: account)
        do { try persist() } catch {
            // Not recorded, so not run: the ledger must not remember a start it never wrote down (a retry
            // would be refused as already started, and only a relaunch would let it run).
            entries[id] = nil
            throw error
        }
        return .run
    }

    /// Records how `id` ended.
    ///
    /// - Throws: ``EffectLedgerError`` `unknownOperation` for an operation never begun; `alreadySucceeded`,
    ///   changing nothing, for one already recorded as succeeded — whatever it is now said to be: failed or
    ///   running (a late answer of a second caller), which would let the next confirmation run it again, or
    ///   succeeded again (a reattach racing the first caller), which would rewrite the result the user was
    ///   shown and when it settled (found in an outside audit). What is recorded stays: read it with
    ///   ``entry(_:)``. An operation recorded as failed may still be completed (a late answer that it did
    ///   succeed is recorded, so that the next confirmation does not run it again).
    public func complete(_ id: String, _ state: State, result: String?) throws {
        guard var entry = entries[id] else {
            throw EffectLedgerError(code: .unknownOperation, message: "\(id) was never begun")
        }
        if entry.state == .succeeded {
            throw EffectLedgerError(
                code: .alreadySucceeded,
                message: "\(id) is recorded as succeeded, with its result; it is not recorded again as \(state)")
        }
        let before = entry
        entry.state = state
        entry.result = result
        entry.settledAt = state == .started ? nil : clock.now()
        entries[id] = entry
        do { try persist() } catch {
            entries[id] = before  // what is on disk
            throw error
        }
    }

    /// What is known about `id`.
    public func entry(_ id: String) -> Entry? { entries[id] }

    /// Operations started and not settled: after a relaunch, reattach them (look their outcome up through
    /// ``Entry/reference``) instead of starting them again.
    public func unsettled() -> [Entry] { entries.values.filter { $0.state == .started }.sorted { $0.id < $1.id } }

    /// The unsettled operations `account` started (those begun without an account too): what a snapshot
    /// taken in `account`'s session lists as in flight. Another account's operation — started before a
    /// switch, still running when the app was killed — is never reattached in this one's session.
    public func unsettled(account: String?) -> [Entry] {
        unsettled().filter { $0.account == nil || AccountID.same($0.account, account) }
    }

    /// Forgets the operations settled before `date`, so that the ledger — rewritten whole on every change —
    /// does not grow for ever. Call it with a date older than any confirmation that may still be replayed
    /// (a screen kept in a snapshot for weeks replays its confirmation on restore: keep at least that long).
    /// An operation still started (its outcome unknown) is never forgotten, nor one settled before the
    /// ledger kept the time. The attempts of one confirmation (``operationID(entry:action:attempt:)``) are
    /// forgotten together or not at all: a failed first attempt forgotten while a later one stays would be
    /// found missing, and run again, by an app that looks for the next attempt after the failed ones.
    /// Returns how many were removed.
    @discardableResult
    public func removeSettled(before date: Date) throws -> Int {
        func isOld(_ entry: Entry) -> Bool { entry.state != .started && (entry.settledAt.map { $0 < date } ?? false) }
        let chains = Dictionary(grouping: entries.values) { Self.confirmation(of: $0.id) }
        let old = entries.filter { _, entry in chains[Self.confirmation(of: entry.id)]!.allSatisfy(isOld) }
        guard !old.isEmpty else { return 0 }
        let before = entries
        for id in old.keys { entries[id] = nil }
        do { try persist() } catch {
            entries = before  // what is on disk
            throw error
        }
        return old.count
    }

    /// The confirmation an operation id belongs to: the id without its `#attempt` suffix (every attempt of a
    /// confirmation shares it), or the id itself when it has none.
    static func confirmation(of id: String) -> Substring {
        guard let mark = id.lastIndex(of: "#"), !id[id.index(after: mark)...].isEmpty,
            id[id.index(after: mark)...].utf8.allSatisfy({ (48...57).contains($0) })
        else { return id[...] }
        return id[..<mark]
    }

    /// Writes the ledger atomically and durably (a temporary file synced, renamed, the directory synced).
    private func persist() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = try encoder.encode(entries.values.sorted { $0.id < $1.id })
        do {
            try DurableFiles.write([UInt8](data), to: file.path, mode: 0o600, exclusive: false)
        } catch { throw EffectLedgerError(code: .ioError, message: "cannot write \(file.path): \(error.description)") }
    }
}

/// Why the effect ledger failed.
public struct EffectLedgerError: KeelError, Equatable {
    /// Codes of ``EffectLedgerError``.
    public typealias Code = ErrorCode<EffectLedgerError>
    /// What went wrong.
    public let code: Code
    /// A short explanation for developers.
    public let message: String

    /// An error of kind `code`.
    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    /// `effect ledger damaged: ...`.
    public var description: String { "effect ledger \(code): \(message)" }
}

extension ErrorCode where Domain == EffectLedgerError {
    /// The ledger file exists but is not a ledger (never replaced).
    public static var damaged: Self { Self("damaged") }
    /// Completing an operation that was never begun.
    public static var unknownOperation: Self { Self("unknownOperation") }
    /// The ledger could not be written (the operation must not run).
    public static var ioError: Self { Self("ioError") }
    /// Completing an operation already recorded as succeeded, with any outcome (nothing is changed).
    public static var alreadySucceeded: Self { Self("alreadySucceeded") }
    /// Another effect ledger (another process, or another instance in this one) has the same file: one at
    /// a time, or each would rewrite the file without the other's entries.
    public static var inUse: Self { Self("inUse") }
}
