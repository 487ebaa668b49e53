public import KeelCore
import KeelCrypto

/// The directory and key-store name of one account's vault: 32 lowercase hex digits derived from the
/// account id's bytes by SHA-256 (MOB-DATA-006).
///
/// Never the raw id: a raw id as a path would be merged with another by a case-insensitive file system
/// (`Bob`, `bob`), could escape its directory, and would leave the user's identifier in file listings and
/// backups. There is no namespace for "no account": one can only be made from a validated ``AccountID``.
public struct VaultNamespace: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The 32 hex digits.
    public let rawValue: String

    /// The namespace of `account`.
    public init(_ account: AccountID) {
        let digest = SHA256Digest.bytes(Array("keel.vault.namespace.v1".utf8) + [0] + Array(account.rawValue.utf8))
        rawValue = Hex.encode(digest.prefix(16))
    }

    /// A namespace read back from disk, or nil unless `rawValue` is 32 lowercase hex digits.
    public init?(rawValue: String) {
        guard rawValue.utf8.count == 32, rawValue.utf8.allSatisfy(Hex.isLowercaseDigit) else { return nil }
        self.rawValue = rawValue
    }

    /// The hex digits.
    public var description: String { rawValue }

    /// Orders namespaces by their digits.
    public static func < (lhs: VaultNamespace, rhs: VaultNamespace) -> Bool { lhs.rawValue < rhs.rawValue }
}
