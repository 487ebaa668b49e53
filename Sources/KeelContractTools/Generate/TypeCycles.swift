/// Cycles in a graph of type names, found without recursion (a long chain of types must not exhaust the
/// stack): Tarjan's strongly connected components, iteratively.
enum TypeCycles {
    /// Every cycle (a component of more than one node, or a node with an edge to itself), each listed in
    /// `order`'s order, the cycles ordered by their first node.
    static func find(order: [String], edges: [String: [String]]) -> [[String]] {
        var index = 0
        var indices: [String: Int] = [:]
        var lowest: [String: Int] = [:]
        var stack: [String] = []
        var onStack: Set<String> = []
        var components: [[String]] = []
        for start in order where indices[start] == nil {
            var work: [(node: String, next: Int)] = [(start, 0)]
            indices[start] = index
            lowest[start] = index
            index += 1
            stack.append(start)
            onStack.insert(start)
            while let (node, next) = work.last {
                let successors = edges[node] ?? []
                if next < successors.count {
                    work[work.count - 1].next += 1
                    let successor = successors[next]
                    if indices[successor] == nil {
                        indices[successor] = index
                        lowest[successor] = index
                        index += 1
                        stack.append(successor)
                        onStack.insert(successor)
                        work.append((successor, 0))
                    } else if onStack.contains(successor) {
                        lowest[node] = min(lowest[node]!, indices[successor]!)
                    }
                    continue
                }
                work.removeLast()
                if let parent = work.last?.node { lowest[parent] = min(lowest[parent]!, lowest[node]!) }
                guard lowest[node] == indices[node] else { continue }
                var component: [String] = []
                while let member = stack.popLast() {
                    onStack.remove(member)
                    component.append(member)
                    if member == node { break }
                }
                if component.count > 1 || successors.contains(node) { components.append(component) }
            }
        }
        let position = Dictionary(order.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
        return
            components
            .map { $0.sorted { position[$0, default: .max] < position[$1, default: .max] } }
            .sorted { position[$0[0], default: .max] < position[$1[0], default: .max] }
    }
}
