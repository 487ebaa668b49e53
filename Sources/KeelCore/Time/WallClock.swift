public import Foundation

/// The source of wall-clock timestamps (for records, expiry dates, `Retry-After` dates).
///
/// Waiting and measuring elapsed time use an injected `any Clock<Duration>` instead; a wall clock
/// can jump (user changes the time, NTP), so it is only ever used to stamp and compare dates.
/// Logic never calls `Date()`: it asks the wall clock it was given, so tests can pin time.
public struct WallClock: Sendable {
    private let read: @Sendable () -> Date

    /// A wall clock that reads `now` from `read`.
    public init(_ read: @escaping @Sendable () -> Date) { self.read = read }

    /// The current date according to this clock.
    public func now() -> Date { read() }

    /// The system's wall clock.
    public static let system = WallClock { Date() }

    /// A clock that always answers `date`.
    public static func fixed(_ date: Date) -> WallClock { WallClock { date } }
}
