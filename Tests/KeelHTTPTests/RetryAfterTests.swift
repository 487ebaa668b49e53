import Foundation
import KeelHTTP
import Testing

@Suite struct RetryAfterTests {
    let now = Date(timeIntervalSince1970: 784_111_777)  // Sun, 06 Nov 1994 08:49:37 GMT

    @Test func parsesDeltaSeconds() {
        #expect(RetryAfter.delay(from: "120", now: now) == .seconds(120))
        #expect(RetryAfter.delay(from: " 0 ", now: now) == .zero)
    }

    @Test(arguments: ["Sun, 06 Nov 1994 08:50:07 GMT", "Sunday, 06-Nov-94 08:50:07 GMT", "Sun Nov  6 08:50:07 1994"])
    func parsesAllThreeHTTPDateForms(value: String) {
        #expect(RetryAfter.delay(from: value, now: now) == .seconds(30))
    }

    @Test func leadingZerosDoNotChangeTheDelay() {
        // Only significant digits count: sixteen characters of which three matter are two minutes, not zero.
        #expect(RetryAfter.delay(from: "0000000000000120", now: now) == .seconds(120))
        #expect(RetryAfter.delay(from: "0000000000000000", now: now) == .zero)
        #expect(RetryAfter.delay(from: "0000000000000000000100000", now: now) == RetryAfter.maximumDelay)
    }

    @Test func aDateInThePastMeansNow() {
        #expect(RetryAfter.delay(from: "Sun, 06 Nov 1994 08:00:00 GMT", now: now) == .zero)
    }

    @Test(arguments: ["-5", "soon", "1.5", "Sun, 32 Nov 1994 08:50:07 GMT", "", "0x10", "١٢"])
    func negativeOrGarbageValuesAreTreatedAsAbsent(value: String) {
        #expect(RetryAfter.delay(from: value, now: now) == nil)
    }

    @Test func absurdlyLargeValuesAreCappedAtADay() {
        #expect(RetryAfter.delay(from: "99999999999999999999999", now: now) == RetryAfter.maximumDelay)
        #expect(RetryAfter.delay(from: "31536000", now: now) == RetryAfter.maximumDelay)
        #expect(RetryAfter.delay(from: "Fri, 31 Dec 9999 23:59:59 GMT", now: now) == RetryAfter.maximumDelay)
    }
}

@Suite struct BackoffTests {
    @Test func ceilingsDoubleUpToTheCap() {
        let backoff = Backoff(base: .milliseconds(100), cap: .seconds(1))
        #expect(
            (1...6).map(backoff.ceiling(forRetry:)) == [
                .milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800), .seconds(1),
                .seconds(1),
            ])
        #expect(backoff.ceiling(forRetry: 1000) == .seconds(1))
    }

    @Test func fullJitterStaysWithinTheCeilingAndIsReproducibleWithASeed() {
        let backoff = Backoff(base: .milliseconds(100), cap: .seconds(5))
        let a = (1...50).map { backoff.delay(forRetry: $0 % 8 + 1, using: .seeded(3)) }
        let b = (1...50).map { backoff.delay(forRetry: $0 % 8 + 1, using: .seeded(3)) }
        #expect(a == b)
        let random = RandomSourceFixture.seeded
        var distinct: Set<Duration> = []
        for retry in 1...8 {
            for _ in 0..<200 {
                let delay = backoff.delay(forRetry: retry, using: random)
                #expect(delay >= .zero && delay <= backoff.ceiling(forRetry: retry))
                distinct.insert(delay)
            }
        }
        #expect(distinct.count > 1000)  // jitter really spreads
    }
}

import KeelCore

enum RandomSourceFixture {
    static let seeded = RandomSource.seeded(11)
}

@Suite struct RetryBudgetTests {
    @Test func retriesSpendTokensAndSuccessesRefundThem() {
        let budget = RetryBudget(capacity: 10, retryCost: 5, successRefund: 1)
        #expect(budget.spendForRetry())
        #expect(budget.spendForRetry())
        #expect(!budget.spendForRetry())
        #expect(budget.available == 0)
        for _ in 0..<5 { budget.recordSuccess() }
        #expect(budget.spendForRetry())
        for _ in 0..<100 { budget.recordSuccess() }
        #expect(budget.available == 10)
    }

    /// A backend that answers only at the third attempt drains the budget: each such call spends two retries
    /// and gets back the last one's cost, so retries stop instead of tripling its load for good (AWS standard
    /// mode; found in an outside audit).
    @Test func aSuccessAfterRetriesGivesBackOnlyTheLastRetrysCost() {
        let budget = RetryBudget(capacity: 100, retryCost: 5, successRefund: 1)
        var calls = 0
        while calls < 100, budget.spendForRetry(), budget.spendForRetry() {
            budget.recordSuccess(refunding: 10)
            calls += 1
        }
        #expect(calls < 100, "the budget never drains")
        #expect((15...25).contains(calls), "\(calls)")
        #expect(budget.available < 10)
    }
}
