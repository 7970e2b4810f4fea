"""The model graph as plain data, and the decisions taken on it (no xDSL here).

`graph.py` describes a program's entry function as operators reading and writing buffers;
`order.py` chooses the order of independent operators that needs the fewest live bytes. The
description is built from the IR by `usmp_dialect.analysis.operator_graph` and is shared by both
frontends (they produce the same IR shape) and by later graph-level decisions.
"""
