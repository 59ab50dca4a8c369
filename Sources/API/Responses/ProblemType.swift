import Server

/// The problem `type` URNs openapi.yaml defines. The list lives in the Server module (whose own
/// errors need it too, and which cannot import API); this is its name in API code.
public typealias ProblemType = Problem.Kind
