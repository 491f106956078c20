"""Named tuples are tree nodes (``stax.ir.pytree``): flattened to their fields, described in
JSON by their class's module and qualified name, rebuilt with that class."""

import collections

from stax.ir import TreeDef, tree_flatten, tree_leaves, tree_unflatten

Pair = collections.namedtuple("Pair", "first second")


def test_a_named_tuple_flattens_and_comes_back():
    tree = ({"p": Pair(1, [2, Pair(3, 4)])}, 5)
    leaves, treedef = tree_flatten(tree)
    assert leaves == [1, 2, 3, 4, 5] == tree_leaves(tree)
    again = TreeDef.from_json(treedef.to_json())
    assert again == treedef
    rebuilt = tree_unflatten(again, leaves)
    assert rebuilt == tree and type(rebuilt[0]["p"]) is Pair
    assert type(rebuilt[0]["p"].second[1]) is Pair
