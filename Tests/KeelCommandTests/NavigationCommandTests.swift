import Foundation
import KeelTesting
import Testing

/// `keel navigation check` and `simulate`, run as the built binary.
@Suite(.timeLimit(.minutes(3))) struct NavigationCommandTests {
    let directory: TemporaryDirectory
    init() throws { directory = try TemporaryDirectory(prefix: "keel-navigation-cli") }

    static let example = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("contracts/navigation.example.json").path

    struct Step: Decodable, Equatable {
        let event: String
        let account: String?
        let stack: [String]
        let modal: String?
        let prompt: String?
        let effects: [String]
        let error: String?
    }

    func simulate(_ script: String) async throws -> (ChildProcess.Termination, [Step], String) {
        try Data(script.utf8).write(to: directory.url("events.txt"))
        let (status, output, errors) = try await runKeel(
            ["navigation", "simulate", Self.example, "--script", directory.url("events.txt").path])
        let steps = try output.split(separator: "\n").map {
            try JSONDecoder().decode(Step.self, from: Data($0.utf8))
        }
        return (status, steps, errors)
    }

    @Test func checkPrintsTheRouteTableAndExitsZeroForTheExample() async throws {
        let (status, output, _) = try await runKeel(["navigation", "check", Self.example])
        #expect(status == .exited(0))
        #expect(output.contains("| edit | home › notes › note | account | no | confirmDiscard | save | no | — |"))
        #expect(output.contains("| note | home › notes | account | no | — | — | no | keel-notes://note/{noteID} |"))
        let (jsonStatus, json, _) = try await runKeel(["navigation", "check", Self.example, "--format", "json"])
        #expect(jsonStatus == .exited(0))
        #expect(json.contains("\"sound\" : true"))
    }

    /// Found in an outside audit: a `|` in a route id or an access name split its row of the Markdown table.
    @Test func theRouteTableEscapesWhatWouldEndACell() async throws {
        let contract = #"""
            {"routes": [{"id": "home", "root": true, "access": "public"},
                        {"id": "a|b", "parent": "home", "access": "custom:x|y"}]}
            """#
        try Data(contract.utf8).write(to: directory.url("pipes.json"))
        let (_, output, errors) = try await runKeel(["navigation", "check", directory.url("pipes.json").path])
        #expect(output.contains(#"| a\|b | home | custom:x\|y | no | — | — | no | — |"#), "\(output)\(errors)")
    }

    @Test func checkListsEveryProblemWithItsRouteAndExitsOne() async throws {
        let broken = #"""
            {"routes": [{"id": "home", "root": true, "access": "public"},
                        {"id": "edit", "parent": "ghost", "access": "account", "input": {"policy": "confirmDiscard"}},
                        {"id": "otp", "parent": "home", "access": "signedIn", "modal": true, "sensitive": true, "deepLink": "app://otp"}]}
            """#
        try Data(broken.utf8).write(to: directory.url("broken.json"))
        let (status, output, _) = try await runKeel(["navigation", "check", directory.url("broken.json").path])
        #expect(status == .exited(1))
        #expect(output.contains("problem: unknownParent: edit:"))
        #expect(output.contains("problem: missingDeathBehaviour: edit:"))
        #expect(output.contains("problem: sensitiveDeepLink: otp:"))
    }

    @Test func unreadableOrMalformedContractsExitTwo() async throws {
        try Data(#"{"routes": [{"id": "home", "root": true, "access": "public", "colour": 1}]}"#.utf8).write(
            to: directory.url("unknown.json"))
        for arguments in [
            ["navigation", "check", directory.url("missing.json").path],
            ["navigation", "check", directory.url("unknown.json").path],
            ["navigation", "simulate", directory.url("unknown.json").path, "--script", "/dev/null"],
            ["navigation", "frobnicate"],
        ] {
            let (status, _, errors) = try await runKeel(arguments)
            #expect(status == .exited(2), "\(arguments)")
            #expect(!errors.isEmpty)
        }
    }

    /// A repeated member (`access` twice) is refused by both commands, never resolved to one of its values.
    @Test func aRepeatedMemberIsRefusedAndAMissingOneIsNamed() async throws {
        try Data(
            #"{"routes": [{"id": "home", "root": true, "access": "account", "access": "public"}]}"#.utf8
        ).write(to: directory.url("repeated.json"))
        for arguments in [
            ["navigation", "check", directory.url("repeated.json").path],
            ["navigation", "simulate", directory.url("repeated.json").path, "--script", "/dev/null"],
        ] {
            let (status, _, errors) = try await runKeel(arguments)
            #expect(status == .exited(2), "\(arguments)")
            #expect(errors.contains(#"duplicate member "access""#), "\(errors)")
        }
        try Data("{}".utf8).write(to: directory.url("empty.json"))
        let (status, _, errors) = try await runKeel(["navigation", "check", directory.url("empty.json").path])
        #expect(status == .exited(2))
        #expect(errors.contains("the member `routes` is missing") && !errors.contains("AnyKey"), "\(errors)")
    }

    @Test func simulateRunsTheNavigatorThroughAProcessDeathRoundTrip() async throws {
        let (status, steps, errors) = try await simulate(
            """
            signin alice
            open notes
            open note noteID=1
            open edit noteID=1
            type half a sentence
            back gesture
            cancel
            background
            kill
            launch
            back systemBack
            confirm
            open note
            expire
            """)
        #expect(status == .exited(0), "\(errors)")
        #expect(steps.count == 14)
        #expect(steps[4].event == "type half a sentence")
        #expect(steps[5].prompt == "confirmDiscard" && steps[5].stack.last == "edit")
        #expect(steps[7].effects == ["saveDraft edit noteID=1", "saveSnapshot"])
        #expect(
            steps[8] == Step(event: "kill", account: nil, stack: [], modal: nil, prompt: nil, effects: [], error: nil))
        #expect(steps[9].stack == ["home", "notes", "note", "edit"] && steps[9].account == "alice")
        #expect(steps[9].effects == ["restoreDraft edit noteID=1"])
        #expect(steps[11].effects == ["deleteDraft edit noteID=1", "saveSnapshot"])
        #expect(steps[12].error == "missing parameter noteID for route note")
        #expect(steps[13].account == nil && steps[13].modal == "signIn")
    }

    @Test func inputThatSurvivesDeathIsSavedAsTypedSoAKillWithoutWarningKeepsIt() async throws {
        // Windows line endings and a byte-order mark are read as the same script.
        let (status, steps, errors) = try await simulate(
            "\u{FEFF}signin alice\r\nopen note noteID=1\r\nopen edit noteID=1\r\n  type half a sentence\r\nkill\r\nlaunch\r\n"
        )
        #expect(status == .exited(0), "\(errors)")
        #expect(
            steps.map(\.event) == [
                "signin alice", "open note noteID=1", "open edit noteID=1", "  type half a sentence", "kill", "launch",
            ])
        // `edit` is confirmDiscard with onDeath: save — the draft is written as it is typed.
        #expect(steps[3].effects == ["saveDraft edit noteID=1"])
        #expect(steps[5].stack == ["home", "note", "edit"])
        #expect(steps[5].effects == ["restoreDraft edit noteID=1"])
    }

    @Test func aSessionThatExpiresWhileTheAppIsDeadAsksForSignInAtLaunch() async throws {
        let (status, steps, errors) = try await simulate(
            "signin alice\nopen notes\nopen note noteID=1\nbackground\nkill\nexpire\nlaunch\n")
        #expect(status == .exited(0), "\(errors)")
        #expect(steps[5].error == nil && steps[5].stack.isEmpty)
        #expect(steps[6].account == nil && steps[6].modal == "signIn", "\(steps[6])")
        #expect(steps[6].effects.contains("signInRequired note noteID=1"), "\(steps[6].effects)")
    }

    @Test func checkJSONHasEveryMemberOfEveryRouteWithNullWhereAbsent() async throws {
        let (status, json, _) = try await runKeel(["navigation", "check", Self.example, "--format", "json"])
        #expect(status == .exited(0))
        let report = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let routes = try #require(report["routes"] as? [[String: Any]])
        #expect(!routes.isEmpty)
        for route in routes {
            #expect(
                Set(route.keys) == ["id", "parents", "access", "modal", "sensitive", "input", "onDeath", "deepLink"])
        }
        let home = try #require(routes.first { $0["id"] as? String == "home" })
        #expect(home["deepLink"] is NSNull && home["input"] is NSNull && home["onDeath"] is NSNull)
    }

    @Test func simulateNeverShowsThePreviousAccountAfterASwitch() async throws {
        let (_, steps, _) = try await simulate(
            """
            signin alice
            link keel-notes://note/42 cold
            open otp
            switch bob
            back systemBack
            back modalDismiss
            """)
        #expect(steps[1].stack == ["home", "notes", "note"])
        #expect(steps[3].stack == ["home"] && steps[3].modal == nil && steps[3].account == "bob")
        #expect(steps[4].effects == ["leaveApp"])
        #expect(steps[5].effects == ["leaveApp"])
    }

    @Test func aRedeliveredIntentIsConsumedOnceAndAColdOneLaunchesTheApp() async throws {
        let (status, steps, _) = try await simulate(
            """
            signin alice
            notify note noteID=5 warm delivery=push-1
            back systemBack
            notify note noteID=5 warm delivery=push-1
            kill
            link keel-notes://note/7 cold delivery=link-1
            notify otp warm
            """)
        #expect(status == .exited(0))
        #expect(steps[1].stack == ["home", "notes", "note"] && steps[1].error == nil)
        #expect(steps[3].effects == ["alreadyConsumed push-1"] && steps[3].stack == ["home", "notes"])
        // Not running, a cold link starts the app (restoring it) and is then taken.
        #expect(steps[5].error == nil && steps[5].stack == ["home", "notes", "note"])
        // A sensitive one-time screen is never opened from outside.
        #expect(steps[6].error?.contains("sensitive") == true && steps[6].modal == nil)
    }

    @Test func withoutAScriptEventsComeFromStandardInputAndEachIsAnsweredAtOnce() async throws {
        let child = try ChildProcess.launch(product: "keel", arguments: ["navigation", "simulate", Self.example])
        try child.writeLine("signin alice")
        let first = try #require(try await child.nextLine(timeout: .seconds(30)))
        #expect(try JSONDecoder().decode(Step.self, from: Data(first.utf8)).account == "alice")
        try child.writeLine("link keel-notes://note/3 warm")
        let second = try #require(try await child.nextLine(timeout: .seconds(30)))
        #expect(try JSONDecoder().decode(Step.self, from: Data(second.utf8)).stack == ["home", "notes", "note"])
        child.closeInput()
        #expect(try await child.waitForExit() == .exited(0))
    }

    @Test func aMalformedLineExitsTwoNamingItAndNothingAfterItRuns() async throws {
        let (status, steps, errors) = try await simulate("signin alice\n\n# a comment\nback sideways\nopen notes\n")
        #expect(status == .exited(2))
        #expect(errors.contains("line 4"))
        #expect(steps.map(\.event) == ["signin alice"])
    }

    /// MOB-DATA-006: an empty or placeholder account id is never an account. `signin` and `switch` with one
    /// (a placeholder, an invisible character, a control character) are malformed lines, as any other: exit 2
    /// naming the line and why, and nothing after it runs.
    @Test func anInvalidAccountIsAMalformedLineAndNothingAfterItRuns() async throws {
        for (event, why) in [
            ("signin null", "placeholder"), ("switch anonymous", "placeholder"), ("signin 0", "placeholder"),
            ("switch 00000000-0000-0000-0000-000000000000", "placeholder"),
            ("signin b\u{200B}ob", "invisible formatting character"), ("switch bob\u{7}", "control character"),
            // At the end of the line too: it is part of the account, not whitespace around the event.
            ("signin bob\u{200B}", "invisible formatting character"), ("switch bob\u{2060}", "invisible"),
        ] {
            let (status, steps, errors) = try await simulate("signin alice\nopen notes\n\(event)\nopen note noteID=1\n")
            #expect(status == .exited(2), "\(event)")
            #expect(
                errors.hasPrefix("error: line 3: ") && errors.contains("account") && errors.contains(why), "\(errors)")
            #expect(steps.map(\.event) == ["signin alice", "open notes"], "\(event)")
        }
        // The first line too: nothing runs.
        let (status, steps, errors) = try await simulate("signin NULL\nopen notes\n")
        #expect(status == .exited(2) && errors.contains("line 1") && steps.isEmpty, "\(errors)")
    }

    /// Found in an outside audit: `signout` purged alice's drafts in the navigator's state, but the drafts file
    /// the run keeps for `kill`/`launch` still had hers (saved as typed, and not saved again at sign-out: the
    /// text had not changed), and her draft came back after a relaunch.
    @Test func aDraftPurgedAtSignOutNeverComesBackAfterARelaunch() async throws {
        // The example's editor, keeping drafts on leave: back saves it and the screen goes, so the sign-out
        // has no input left to save (the drafts file was rewritten only when a draft was saved or deleted).
        try Data(
            """
            {"routes": [
              {"id": "home", "root": true, "access": "public"},
              {"id": "note", "parent": "home", "access": "account", "parameters": ["noteID"]},
              {"id": "edit", "parent": "note", "access": "account", "parameters": ["noteID"],
               "input": {"policy": "saveDraft"}},
              {"id": "signIn", "access": "public", "modal": true}
            ]}
            """.utf8
        ).write(to: directory.url("drafts.json"))
        try Data(
            """
            signin alice
            open note noteID=1
            open edit noteID=1
            type secret draft of alice
            back systemBack
            signout
            kill
            launch
            signin alice
            open note noteID=1
            open edit noteID=1
            """.utf8
        ).write(to: directory.url("purge.txt"))
        let (status, output, errors) = try await runKeel([
            "navigation", "simulate", directory.url("drafts.json").path, "--script", directory.url("purge.txt").path,
        ])
        #expect(status == .exited(0), "\(errors)")
        let steps = try output.split(separator: "\n").map { try JSONDecoder().decode(Step.self, from: Data($0.utf8)) }
        #expect(steps.first { $0.event == "signout" }?.effects == ["purgeAccount alice", "saveSnapshot"])
        #expect(steps.last?.stack == ["home", "note", "edit"])
        #expect(!steps.contains { $0.effects.contains { $0.hasPrefix("restoreDraft") } })
    }

    /// Found in an outside audit: a line that is not UTF-8 was read with replacement characters, so
    /// `signin al\xFFice` and `switch al\xFEice` named the same account and the switch did nothing.
    @Test func aLineThatIsNotUTF8IsMalformedAndNothingAfterItRuns() async throws {
        var script = Data("signin alice\nopen notes\nswitch al".utf8)
        script.append(contentsOf: [0xFE])
        script.append(contentsOf: Data("ice\nopen notes\n".utf8))
        try script.write(to: directory.url("bytes.txt"))
        let (status, output, errors) = try await runKeel(
            ["navigation", "simulate", Self.example, "--script", directory.url("bytes.txt").path])
        #expect(status == .exited(2))
        #expect(errors.contains("line 3: not valid UTF-8"))
        let steps = try output.split(separator: "\n").map { try JSONDecoder().decode(Step.self, from: Data($0.utf8)) }
        #expect(steps.map(\.event) == ["signin alice", "open notes"])
        // From standard input too.
        let child = try ChildProcess.launch(product: "keel", arguments: ["navigation", "simulate", Self.example])
        try child.write(script)
        child.closeInput()
        #expect(try await child.waitForExit() == .exited(2))
        #expect(child.output(of: .standardError).contains("line 3: not valid UTF-8"))
    }

    /// Found in an outside audit: standard input that could not be read (a directory) was taken for the end
    /// of the events (exit 0, nothing said), and a temporary directory that could not be made gave exit 1
    /// with Foundation's "error 512". Both are exit 2, saying what is wrong.
    @Test func unreadableStandardInputOrNoTemporaryDirectoryExitsTwoSayingSo() async throws {
        let keel = ChildProcess.productsDirectory.appendingPathComponent("keel").path
        let child = try ChildProcess.launch(
            executable: "/bin/sh",
            arguments: ["-c", #"exec "$0" navigation simulate "$1" < "$2""#, keel, Self.example, directory.url.path])
        #expect(try await child.waitForExit() == .exited(2))
        #expect(child.output(of: .standardError).contains("standard input cannot be read"))
        try Data("{}".utf8).write(to: directory.url("not-a-directory"))
        let noTemporary = try ChildProcess.launch(
            product: "keel", arguments: ["navigation", "simulate", Self.example, "--script", Self.example],
            environment: ["TMPDIR": directory.url("not-a-directory").path])
        #expect(try await noTemporary.waitForExit() == .exited(2))
        #expect(noTemporary.output(of: .standardError).contains("set TMPDIR"))
        // Found in an outside audit: a TMPDIR naming nothing was created by the run.
        let nowhere = directory.url("nowhere").path
        let absent = try ChildProcess.launch(
            product: "keel", arguments: ["navigation", "simulate", Self.example, "--script", Self.example],
            environment: ["TMPDIR": nowhere])
        #expect(try await absent.waitForExit() == .exited(2))
        #expect(!FileManager.default.fileExists(atPath: nowhere))
    }

    /// Found in an outside audit: a run stopped by SIGTERM or Ctrl-C left its directory (drafts, session)
    /// behind, and a reader that went away (`| head -1`) killed it with SIGPIPE (exit 141), leaving it too.
    @Test func aStoppedRunOrOneWhoseReaderLeftRemovesItsDirectory() async throws {
        let temporary = directory.url("tmp")
        try FileManager.default.createDirectory(at: temporary, withIntermediateDirectories: true)
        func runs() throws -> [String] {
            try FileManager.default.contentsOfDirectory(atPath: temporary.path).filter {
                $0.hasPrefix("keel-navigation-")
            }
        }
        let stopped = try ChildProcess.launch(
            product: "keel", arguments: ["navigation", "simulate", Self.example],
            environment: ["TMPDIR": temporary.path])
        try stopped.writeLine("signin alice")
        _ = try #require(try await stopped.nextLine(timeout: .seconds(30)))
        #expect(try runs().count == 1)
        stopped.kill(signal: SIGTERM)
        #expect(try await stopped.waitForExit() == .exited(128 + SIGTERM))
        #expect(try runs().isEmpty)
        // The reader goes away after the first line; the run ends quietly, its directory removed.
        let keel = ChildProcess.productsDirectory.appendingPathComponent("keel").path
        let events = directory.url("events.txt")
        try Data(String(repeating: "signin alice\nopen notes\nback systemBack\n", count: 2000).utf8).write(to: events)
        let piped = try ChildProcess.launch(
            executable: "/bin/sh",
            arguments: [
                "-c", #"TMPDIR="$3" "$0" navigation simulate "$1" < "$2" | head -1 > /dev/null"#,
                keel, Self.example, events.path, temporary.path,
            ])
        // (The shell's status is head's; a run killed by SIGPIPE shows in the directory it leaves behind.)
        #expect(try await piped.waitForExit() == .exited(0))
        #expect(try runs().isEmpty)
    }

    /// Found in review: a parameter given twice was read as its last value, and a tab between words made
    /// the line malformed.
    @Test func aParameterGivenTwiceIsMalformedAndTabsSeparateWords() async throws {
        let (twice, steps, errors) = try await simulate("signin alice\nopen note noteID=1 noteID=2\n")
        #expect(twice == .exited(2))
        #expect(errors.contains("line 2") && errors.contains("noteID"), "\(errors)")
        #expect(steps.map(\.event) == ["signin alice"])
        let (tabbed, tabbedSteps, _) = try await simulate("signin\talice\nopen\tnotes\n")
        #expect(tabbed == .exited(0))
        #expect(tabbedSteps.last?.stack == ["home", "notes"])
        // Found in an outside audit: `type` took its text only after a space.
        let (typed, typedSteps, typedErrors) = try await simulate(
            "signin alice\nopen note noteID=1\nopen edit noteID=1\ntype\tmy text\n")
        #expect(typed == .exited(0), "\(typedErrors)")
        #expect(typedSteps.last?.event == "type\tmy text" && typedSteps.last?.error == nil)
        #expect(typedSteps.last?.effects.contains("saveDraft edit noteID=1") == true, "\(typedSteps)")
    }

    /// Found in an outside audit: a script beginning with `launch` — the cold start the event language
    /// describes — was answered "the app is running; kill it first". As the first line it is that cold start;
    /// later, a running app must still be killed first.
    @Test func aScriptMayBeginWithTheColdStart() async throws {
        let (status, steps, errors) = try await simulate("launch\nsignin alice\nopen notes\nlaunch\nkill\nlaunch\n")
        #expect(status == .exited(0), "\(errors)")
        #expect(steps.map(\.event) == ["launch", "signin alice", "open notes", "launch", "kill", "launch"])
        #expect(steps[0].error == nil && steps[0].stack == ["home"], "\(steps[0])")
        #expect(steps[3].error?.contains("kill it first") == true, "\(steps[3])")
        #expect(steps[5].error == nil && steps[5].stack == ["home", "notes"], "\(steps[5])")
    }
}
