"""Copy an OpenAPI document with annotation-only `allOf` wrappers collapsed, for Optic.

poem-openapi documents a field whose type is a named schema as
    {"allOf": [{"$ref": "#/components/schemas/X"}, {"description": "..."}], "description": "..."}
That is valid OpenAPI 3.0 (the second member only annotates). Optic 1.0.9's denormalizer
(@useoptic/openapi-io, denormalizeProperty.js) merges `allOf` as if every member were an object:
members without `type: object` are dropped with an "invalid allOf variant" warning, so a field
whose named schema is an enum or a scalar (ErrorCode, IngestionStatus, CacheStatus, ...) turns into
an empty object and any change to it, even a type change, goes unreported.

Here such a wrapper becomes the single real member (`{"$ref": ...}`). Only annotation keywords are
dropped, which never decide whether a change is breaking, so this makes Optic see more, not less.
Usage: optic_normalize.py IN.json OUT.json
"""
import json
import sys

ANNOTATIONS = {"description", "title", "example", "examples", "externalDocs", "deprecated"}


def annotation_only(schema):
    return isinstance(schema, dict) and set(schema) <= ANNOTATIONS


def collapse(node):
    if isinstance(node, list):
        return [collapse(x) for x in node]
    if not isinstance(node, dict):
        return node
    node = {k: collapse(v) for k, v in node.items()}
    all_of = node.get("allOf")
    if isinstance(all_of, list) and set(node) - {"allOf"} <= ANNOTATIONS:
        real = [m for m in all_of if not annotation_only(m)]
        if len(real) == 1:
            return real[0]
    return node


def main():
    src, dst = sys.argv[1], sys.argv[2]
    with open(src, encoding="utf-8") as f:
        doc = json.load(f)
    with open(dst, "w", encoding="utf-8") as f:
        json.dump(collapse(doc), f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
