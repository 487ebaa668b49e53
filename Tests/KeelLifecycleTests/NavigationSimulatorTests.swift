import Foundation
import KeelCore
import KeelLifecycle
import KeelTesting
import Testing

/// The simulator's own persistence: its drafts file, across a kill and a launch.
@Suite struct NavigationSimulatorTests {
    /// MOB-DATA-006: a draft an earlier version kept for an account id that is not valid ("" or "null", which
    /// navigation took as accounts) is restored into no account, and never deleted: the drafts file is rewritten
    /// with it as it was, beside the account's own drafts, which come back as always.
    @Test func aDraftOfAnInvalidAccountIsRestoredToNoAccountAndKept() throws {
        let directory = try TemporaryDirectory(prefix: "keel-simulator")
        let simulator = try NavigationSimulator(
            contract: try NavigationContract(exampleRoutes), directory: directory.url)
        for line in ["signin alice", "open notes", "open note noteID=1", "open edit noteID=1", "type mine", "kill"] {
            #expect(simulator.run(try NavigationSimulator.parse(line), line: line).error == nil, "\(line)")
        }
        let file = directory.url("drafts.json")
        let orphan = #"{"key":{"account":"","route":"edit","parameters":{"noteID":"2"}},"text":"nobody's"}"#
        var drafts = String(decoding: try Data(contentsOf: file), as: UTF8.self)
        #expect(drafts.hasPrefix("[") && drafts.hasSuffix("]") && drafts.contains("mine"), "\(drafts)")
        drafts = String(drafts.dropLast()) + "," + orphan + "]"
        try Data(drafts.utf8).write(to: file)

        let orphanDraft = try #require(try JSONSerialization.jsonObject(with: Data(orphan.utf8)) as? NSDictionary)

        let launched = simulator.run(.launch, line: "launch")
        #expect(launched.effects == ["restoreDraft edit noteID=1"] && launched.account == .alice)
        #expect(simulator.top?.input == "mine")
        // Her draft is saved again, then discarded: the file keeps the orphan as it was, each time.
        let typed = simulator.run(.event(.type("mine, more")), line: "type mine, more")
        #expect(typed.effects.contains("saveDraft edit noteID=1"))
        #expect(try storedDrafts(in: file).contains(orphanDraft))
        for line in ["back systemBack", "confirm"] {
            _ = simulator.run(try NavigationSimulator.parse(line), line: line)
        }
        #expect(try storedDrafts(in: file) == [orphanDraft])
    }

    /// The drafts in the drafts file (its members come in no fixed order).
    func storedDrafts(in file: URL) throws -> [NSDictionary] {
        try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [NSDictionary])
    }
}
