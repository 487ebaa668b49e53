extension DecodingError {
    /// The error as a person reads it: where in the input (`.routes[2].access`) and what is wrong, without
    /// the decoder's internal types (a missing member is named, not printed as a coding key).
    package var readableDescription: String {
        let context: Context
        let problem: String
        switch self {
        case .keyNotFound(let key, let found):
            context = found
            problem = "the member `\(key.stringValue)` is missing"
        case .typeMismatch(_, let found), .valueNotFound(_, let found), .dataCorrupted(let found):
            context = found
            problem = found.debugDescription
        @unknown default:
            return "\(self)"
        }
        let path = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? "." + $0.stringValue }.joined()
        return path.isEmpty ? problem : "at \(path): \(problem)"
    }
}
