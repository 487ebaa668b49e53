/// A payments-API-shaped OpenAPI 3.0 description, written to prove the contract tools at scale: the
/// patterns of large public descriptions, many times over.
///
/// Per resource `i` (three component schemas each):
/// - `resource_i`: an object with an `object` string marker, integer and string enums, and expandable
///   fields — `anyOf: [{type: string, maxLength: 5000}, {$ref: resource_j}]` — plain, `nullable`, in arrays
///   and inside a nested object, plus a three-way one (id, the resource, or its deleted form);
/// - `deleted_resource_i`: `{id, object, deleted: {type: boolean, enum: [true]}}`, the deleted form;
/// - `resource_i_expanded`: `allOf` of `resource_i` and members with a boolean marker and an integer enum.
///
/// Each resource has a `GET /v1/resource_i/{id}` whose 200 answers the resource and whose `default` answers
/// a shared error schema. Deterministic: the same `resources` give the same text.
public enum PaymentsAPI {
    /// The description with `resources` resources (3 × `resources` component schemas), as YAML.
    public static func yaml(resources: Int) -> String {
        precondition(resources >= 2, "PaymentsAPI needs at least two resources to reference one another")
        var out = """
            openapi: 3.0.0
            info:
              title: Payments (Keel fixture)
              version: 2026-12-01
            paths:

            """
        for index in 0..<resources {
            out += """
                  /v1/resource_\(index)/{id}:
                    get:
                      operationId: getResource\(index)
                      parameters:
                        - {name: id, in: path, required: true, schema: {type: string, maxLength: 5000}}
                        - name: expand
                          in: query
                          required: false
                          schema: {type: array, items: {type: string, maxLength: 5000}}
                      responses:
                        '200':
                          description: The resource.
                          content:
                            application/json:
                              schema: {$ref: '#/components/schemas/resource_\(index)'}
                        default:
                          description: Error response.
                          content:
                            application/json:
                              schema: {$ref: '#/components/schemas/error'}

                """
        }
        out += """
            components:
              schemas:
                error:
                  type: object
                  required: [error]
                  properties:
                    error:
                      type: object
                      required: [type]
                      properties:
                        type: {type: string, enum: [api_error, card_error, idempotency_error, invalid_request_error]}
                        code: {type: string, maxLength: 5000}
                        message: {type: string, maxLength: 40000}

            """
        for index in 0..<resources {
            let parent = (index + 1) % resources
            let owner = (index + 7) % resources
            let related = (index + 13) % resources
            let source = (index + 3) % resources
            out += """
                    resource_\(index):
                      description: Resource \(index), with fields that expand to other resources.
                      type: object
                      required: [id, object, created, livemode, status, priority, parent]
                      properties:
                        id: {type: string, maxLength: 5000, description: Unique identifier for the object.}
                        object: {type: string, enum: [resource_\(index)], description: "String representing the object's type."}
                        created: {type: integer, format: int64, description: Time at which the object was created.}
                        livemode: {type: boolean}
                        status: {type: string, enum: [active, inactive, pending, canceled]}
                        priority: {type: integer, enum: [1, 2, 3]}
                        amount: {type: integer, nullable: true}
                        description: {type: string, maxLength: 5000, nullable: true}
                        metadata:
                          type: object
                          additionalProperties: {type: string, maxLength: 500}
                        parent:
                          description: The parent's ID, or the parent when expanded.
                          anyOf:
                            - {type: string, maxLength: 5000}
                            - {$ref: '#/components/schemas/resource_\(parent)'}
                        owner:
                          description: The owner's ID, the owner when expanded, or its deleted form.
                          nullable: true
                          anyOf:
                            - {type: string, maxLength: 5000}
                            - {$ref: '#/components/schemas/resource_\(owner)'}
                            - {$ref: '#/components/schemas/deleted_resource_\(owner)'}
                        related:
                          type: array
                          items:
                            anyOf:
                              - {type: string, maxLength: 5000}
                              - {$ref: '#/components/schemas/resource_\(related)'}
                        details:
                          type: object
                          nullable: true
                          properties:
                            source:
                              anyOf:
                                - {type: string, maxLength: 5000}
                                - {$ref: '#/components/schemas/resource_\(source)_expanded'}
                            attempts: {type: integer, enum: [0, 1, 2, 3, 4, 5]}
                    deleted_resource_\(index):
                      type: object
                      required: [id, object, deleted]
                      properties:
                        id: {type: string, maxLength: 5000}
                        object: {type: string, enum: [resource_\(index)]}
                        deleted: {type: boolean, enum: [true], description: Always true for a deleted object.}
                    resource_\(index)_expanded:
                      allOf:
                        - {$ref: '#/components/schemas/resource_\(index)'}
                        - type: object
                          required: [expanded, tier]
                          properties:
                            expanded: {type: boolean, enum: [true]}
                            tier: {type: integer, enum: [10, 20, 30]}

                """
        }
        return out
    }
}
