import Foundation
import KeelReference
import KeelTesting
import Testing

/// The pieces of `keel demo`, one test each: `keel-notes` processes driven against a `keel backend` process,
/// every claim of the scenario checked against what the processes reported.
@Suite(.timeLimit(.minutes(2))) struct DemoScenarioTests {
    static let keel = ChildProcess.productsDirectory.appendingPathComponent("keel").path

    @Test(arguments: NotesDemo.scenarios.map(\.id))
    func scenarioHolds(_ id: String) async throws {
        let directory = try TemporaryDirectory(prefix: "keel-demo-\(id)")
        let demo = NotesDemo(.init(keel: Self.keel, notes: NotesDevice.executable, directory: directory.url))
        let report = try await demo.run(only: [id])
        let outcome = try #require(report.outcomes.first)
        let failures = outcome.verifications.filter { !$0.held }.map {
            "\($0.claim): expected \($0.expected), saw \($0.seen)"
        }
        #expect(outcome.abortion == nil, "\(outcome.abortion ?? "")")
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
        #expect(outcome.verifications.count >= 4, "a scenario proves its point with several checks")
        for requirement in outcome.scenario.requirements {
            #expect(!outcome.verifications(for: requirement).isEmpty, "no check of \(id) shows \(requirement)")
        }
        #expect(outcome.passed)
    }

    @Test func everyScenarioNamesRequirementsOfTheStandard() throws {
        let standard = try String(
            contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(
                    "shared/REQUIREMENTS.md"),
            encoding: .utf8)
        for scenario in NotesDemo.scenarios {
            #expect(!scenario.requirements.isEmpty)
            for requirement in scenario.requirements {
                #expect(standard.contains("## \(requirement) "), "\(scenario.id) names \(requirement)")
                #expect(NotesDemo.requirementTitles[requirement] != nil)
            }
        }
        // The issue's list: offline, pending, kill, conflict, switch, link, portal, update, traces (+ publish).
        #expect(
            Set(NotesDemo.scenarios.map(\.id)).isSuperset(of: [
                "offline", "kill", "conflict", "switch", "links", "portal", "update", "trace",
            ]))
    }

    @Test func aCheckCountsOnlyForTheRequirementsItChecks() throws {
        // offline names MOB-DATA-004 and MOB-API-003; its checks show one or the other (or both, untagged).
        let scenario = try #require(NotesDemo.scenarios.first { $0.id == "offline" })
        #expect(scenario.requirements == ["MOB-DATA-004", "MOB-API-003"])
        let stale = NotesDemo.Verification(
            claim: "the list is marked stale", held: true, expected: "true", seen: "true",
            requirements: ["MOB-DATA-004"])
        let notSent = NotesDemo.Verification(
            claim: "sync says nothing was sent", held: false, expected: "notSent", seen: "unknown",
            requirements: ["MOB-API-003"])
        let both = NotesDemo.Verification(claim: "the edit is kept", held: true, expected: "pending", seen: "pending")
        let report = NotesDemo.Report(
            outcomes: [
                .init(
                    scenario: scenario, timeline: [.verified(stale), .verified(notSent), .verified(both)], abortion: nil
                )
            ],
            duration: .seconds(1))
        #expect(report.verifications(for: "MOB-DATA-004") == [stale, both])
        #expect(report.verifications(for: "MOB-API-003") == [notSent, both])
        let summary = NotesDemo.summary(report)
        let data = try #require(summary.first { $0.contains("MOB-DATA-004") })
        let api = try #require(summary.first { $0.contains("MOB-API-003") })
        #expect(data.contains("2/2 checks") && api.contains("1/2 checks"), "\(summary)")
        // Marked by its own checks (found in an outside audit: a failed check of MOB-API-003 marked MOB-DATA-004,
        // whose two checks held, ✗ too).
        #expect(data.hasPrefix("  ✓ MOB-DATA-004") && api.hasPrefix("  ✗ MOB-API-003"), "\(summary)")
        let html = NotesDemo.html(report)
        #expect(html.contains("✓ 2/2</td>") && html.contains("✗ 1/2</td>"))
        // A scenario that stopped early demonstrates none of its requirements, whatever held before it stopped.
        let stopped = NotesDemo.Report(
            outcomes: [.init(scenario: scenario, timeline: [.verified(stale)], abortion: "the app did not answer")],
            duration: .seconds(1))
        #expect(!stopped.demonstrated("MOB-DATA-004"))
        #expect(NotesDemo.summary(stopped).contains { $0.hasPrefix("  ✗ MOB-DATA-004") })
    }

    @Test func aCheckThatDidNotHoldIsShownWithWhatWasExpectedAndSeen() {
        let scenario = NotesDemo.scenarios[0]
        let failed = NotesDemo.Verification(
            claim: "the list is marked stale", held: false, expected: "true", seen: "false")
        let held = NotesDemo.Verification(claim: "both notes are shown", held: true, expected: "2", seen: "2")
        let report = NotesDemo.Report(
            outcomes: [.init(scenario: scenario, timeline: [.verified(held), .verified(failed)], abortion: nil)],
            duration: .seconds(3))
        #expect(!report.passed)
        #expect(
            NotesDemo.lines(for: .verified(failed)) == [
                "      ✗ the list is marked stale", "          expected: true", "          seen:     false",
            ])
        let summary = NotesDemo.summary(report).joined(separator: "\n")
        #expect(summary.contains("✗ MOB-DATA-004") && summary.contains("1/2 checks"))
        #expect(summary.contains("1 of 2 checks did not hold"))
        let html = NotesDemo.html(report)
        #expect(
            html.contains("expected: true") && html.contains("seen: false") && html.contains("class=\"verdict bad\""))
        #expect(!html.contains("http://") && !html.contains("https://"), "no external assets")
    }
}
