import Foundation

// MARK: - ECMA-262 regex

extension FormatChecker {
    /// Whether `pattern` is an ECMA-262 regular expression: ECMA-only syntax is checked and translated here,
    /// the rest of the grammar is left to ICU via `NSRegularExpression`.
    static func isRegex(_ pattern: String) -> Bool {
        var translator = ECMARegexTranslator(pattern)
        guard let translated = translator.translate() else { return false }
        return CompiledPatterns.formats.box(for: translated).regex != nil
    }
}

/// Rewrites an ECMA-262 pattern into ICU syntax with the same structure, rejecting what ECMA-262 (with the
/// `u` flag) forbids but ICU would accept: inline flag groups, comments, `(?P...)`, unknown escapes, lone
/// brackets and stacked quantifiers.
