import Foundation
import KeelCore

/// What checking the app's version at launch did: whether it changed since the last check, and which caches
/// declaring the `appVersionChange` deletion trigger were reset because it did (``Vaults/checkAppVersion(_:)``,
/// ``DataStore/checkAppVersion(_:)``).
///
/// Any other version than the one recorded is a change — an upgrade, a downgrade (a cache a newer build wrote
/// may be in a shape this one cannot read), or none recorded yet (a first launch, or data written before Keel
/// recorded versions: an unknown version is not known to be this one). Only caches are ever reset: the
/// inventory refuses `appVersionChange` on anything else (MOB-API-005, MOB-DATA-003).
public struct AppVersionCheck: Sendable, Equatable {
    /// The version the app runs now (the one checked).
    public let version: String
    /// The version recorded before this check (``version`` itself when unchanged); nil when none was (a first
    /// launch, or data of a Keel that did not record versions).
    public let previous: String?
    /// Whether caches were reset for a change of version: false when the recorded version is this one and
    /// nothing of an earlier change was left to finish.
    public let changed: Bool
    /// The shared or ``DataStore`` caches reset (sorted), each only where it held something.
    public internal(set) var resetDatasets: [String] = []
    /// One report per account vault whose caches were reset (closed vaults included), by namespace.
    public internal(set) var vaults: [PurgeReport] = []
    /// The stores whose caches could not be reset by this check, each with why (empty when every store is
    /// done). They stay on the record's list: each is reset before it is next opened — ``Vaults/open(_:)``
    /// for a vault, the shared cache's first use in a process — which refuses with ``VaultError``
    /// `appVersionResetUnfinished` while that fails, and the next check tries them again. ``changed`` is true
    /// all the same: clear the app's own caches, and report these.
    public internal(set) var unfinished: [Unfinished] = []

    /// Whether every store was reset (nothing ``unfinished``).
    public var isFinished: Bool { unfinished.isEmpty }

    /// A store whose caches are still to be reset for the change (``unfinished``).
    public struct Unfinished: Sendable, Equatable, CustomStringConvertible {
        /// Which store.
        public enum Store: Sendable, Hashable {
            /// The shared cache (``Vaults/shared``).
            case shared
            /// The vault of this namespace.
            case vault(VaultNamespace)
        }

        /// The store.
        public let store: Store
        /// Why its reset failed.
        public let error: VaultError

        /// `vault <namespace>: <error>` or `shared cache: <error>`.
        public var description: String {
            switch store {
            case .shared: return "shared cache: \(error)"
            case .vault(let namespace): return "vault \(namespace.rawValue): \(error)"
            }
        }

        /// The same store, failed with the same code and message (the underlying errors are not compared).
        public static func == (lhs: Unfinished, rhs: Unfinished) -> Bool {
            lhs.store == rhs.store && lhs.error.code == rhs.error.code && lhs.error.message == rhs.error.message
        }
    }

    init(version: String, previous: String?, changed: Bool) {
        self.version = version
        self.previous = previous
        self.changed = changed
    }

    /// Refuses a version that names nothing: an empty one (a missing `CFBundleShortVersionString`, say) would
    /// be recorded, and the next real version read as a change from it — or, passed every time, hide one.
    static func validate(_ version: String) throws(InventoryError) {
        guard !version.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, version.utf8.count <= 256 else {
            throw InventoryError(
                code: .invalidAppVersion, dataset: nil, problems: [],
                message: "an app version is 1 to 256 bytes and not blank: \(version.debugDescription)")
        }
    }

    /// Whether `declaration` is reset when the app's version changes: a cache that lists the trigger. (The
    /// inventory refuses the trigger on anything else; a declaration read back from a vault's manifest was
    /// never checked by this app's inventory, so the role is asked again.)
    static func resets(_ declaration: Dataset) -> Bool {
        declaration.role.isCache && declaration.deletionTriggers.contains(.appVersionChange)
    }
}
