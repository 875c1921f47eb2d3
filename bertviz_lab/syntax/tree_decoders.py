"""The two tree decoders of Perturbed Masking's released code, ported line for line so that trees match
theirs exactly (ties, the absence of a single-root constraint, the multiplicative cycle contraction):

- ``eisner``: first-order projective decoding over ``scores[head, modifier]`` (index 0 = ROOT, which can
  take several children), from LxMLS's "Exercise 4.3.6" as vendored in LividWo/Perturbed-Masking
  ``dependency/eisner.py`` (commit f578592).
- ``chu_liu_edmonds``: Timothy Dozat's maximum spanning arborescence over ``scores[dependent, head]``
  with Tarjan's cycle finding, from ``dependency/standfordMST.py`` (same commit). Cycles are contracted
  by *multiplying* scores, as that code does (not Edmonds' additive rule): with raw distances as scores
  this is what their "cle" decoder computes.

Copyright (c) 2020 zywu, MIT License (github.com/LividWo/Perturbed-Masking/blob/master/LICENSE); the
Eisner solution is from the LxMLS lab guide (github.com/LxMLS/lxmls-toolkit, MIT). No maintained package
on the index ships either decoder with these conventions.
"""
from __future__ import annotations

import numpy as np


def eisner(scores: np.ndarray) -> np.ndarray:
    """Heads (index 0 = ROOT, ``heads[0] = -1``) of the best projective tree under ``scores[head, modifier]``."""
    nr, nc = np.shape(scores)
    if nr != nc:
        raise ValueError("scores must be a square matrix with one row per word and one for the root")
    n = nr - 1
    complete = np.zeros([n + 1, n + 1, 2])  # s, t, direction (right = 1)
    incomplete = np.zeros([n + 1, n + 1, 2])
    complete_backtrack = -np.ones([n + 1, n + 1, 2], dtype=int)
    incomplete_backtrack = -np.ones([n + 1, n + 1, 2], dtype=int)
    incomplete[0, :, 0] -= np.inf
    for k in range(1, n + 1):
        for s in range(n - k + 1):
            t = s + k
            values = complete[s, s:t, 1] + complete[(s + 1):(t + 1), t, 0] + scores[t, s]  # left arc t -> s
            incomplete[s, t, 0] = np.max(values)
            incomplete_backtrack[s, t, 0] = s + np.argmax(values)
            values = complete[s, s:t, 1] + complete[(s + 1):(t + 1), t, 0] + scores[s, t]  # right arc s -> t
            incomplete[s, t, 1] = np.max(values)
            incomplete_backtrack[s, t, 1] = s + np.argmax(values)
            values = complete[s, s:t, 0] + incomplete[s:t, t, 0]
            complete[s, t, 0] = np.max(values)
            complete_backtrack[s, t, 0] = s + np.argmax(values)
            values = incomplete[s, (s + 1):(t + 1), 1] + complete[(s + 1):(t + 1), t, 1]
            complete[s, t, 1] = np.max(values)
            complete_backtrack[s, t, 1] = s + 1 + np.argmax(values)
    heads = -np.ones(n + 1, dtype=int)

    def backtrack(s: int, t: int, direction: int, complete: int) -> None:  # their backtrack_eisner
        if s == t:
            return
        if complete:
            r = complete_backtrack[s][t][direction]
            if direction == 0:
                backtrack(s, r, 0, 1)
                backtrack(r, t, 0, 0)
            else:
                backtrack(s, r, 1, 0)
                backtrack(r, t, 1, 1)
            return
        r = incomplete_backtrack[s][t][direction]
        if direction == 0:
            heads[s] = t
        else:
            heads[t] = s
        backtrack(s, r, 1, 1)
        backtrack(r + 1, t, 0, 1)

    backtrack(0, n, 1, 1)
    return heads


def _tarjan(tree: np.ndarray) -> list[np.ndarray]:
    """The cycles (boolean masks) of the graph ``tree[dependent] = head``."""
    indices = -np.ones_like(tree)
    lowlinks = -np.ones_like(tree)
    onstack = np.zeros_like(tree, dtype=bool)
    stack: list[int] = []
    counter = [0]
    cycles: list[np.ndarray] = []

    def strong_connect(i: int) -> None:
        counter[0] += 1
        indices[i] = lowlinks[i] = counter[0] - 1
        stack.append(i)
        onstack[i] = True
        for j in np.where(np.equal(tree, i))[0]:
            if indices[j] == -1:
                strong_connect(j)
                lowlinks[i] = min(lowlinks[i], lowlinks[j])
            elif onstack[j]:
                lowlinks[i] = min(lowlinks[i], indices[j])
        if lowlinks[i] == indices[i]:
            cycle = np.zeros_like(indices, dtype=bool)
            while stack[-1] != i:
                j = stack.pop()
                onstack[j] = False
                cycle[j] = True
            stack.pop()
            onstack[i] = False
            cycle[i] = True
            if cycle.sum() > 1:
                cycles.append(cycle)

    for i in range(len(tree)):
        if indices[i] == -1:
            strong_connect(i)
    return cycles


def chu_liu_edmonds(scores: np.ndarray) -> np.ndarray:
    """Heads (``tree[0] = 0``) of the maximum spanning arborescence under ``scores[dependent, head]``, as
    Dozat's code computes it (the diagonal and row 0 zeroed first; ``scores`` is not modified)."""
    scores = np.array(scores, dtype=np.float64) * (1 - np.eye(scores.shape[0]))
    scores[0] = 0
    scores[0, 0] = 1
    tree = np.argmax(scores, axis=1)
    cycles = _tarjan(tree)
    if not cycles:
        return tree
    cycle = cycles.pop()
    cycle_locs = np.where(cycle)[0]
    cycle_scores = scores[cycle, tree[cycle]]
    cycle_score = cycle_scores.prod()
    noncycle = np.logical_not(cycle)
    noncycle_locs = np.where(noncycle)[0]
    metanode_head_scores = scores[cycle][:, noncycle] / cycle_scores[:, None] * cycle_score
    metanode_dep_scores = scores[noncycle][:, cycle]
    metanode_heads = np.argmax(metanode_head_scores, axis=0)
    metanode_deps = np.argmax(metanode_dep_scores, axis=1)
    subscores = np.pad(scores[noncycle][:, noncycle], ((0, 1), (0, 1)), "constant")
    subscores[-1, :-1] = metanode_head_scores[metanode_heads, np.arange(len(noncycle_locs))]
    subscores[:-1, -1] = metanode_dep_scores[np.arange(len(noncycle_locs)), metanode_deps]
    contracted_tree = chu_liu_edmonds(subscores)
    cycle_head = contracted_tree[-1]
    contracted_tree = contracted_tree[:-1]
    new_tree = -np.ones_like(tree)
    from_outside = contracted_tree < len(contracted_tree)
    new_tree[noncycle_locs[from_outside]] = noncycle_locs[contracted_tree[from_outside]]
    from_cycle = np.logical_not(from_outside)
    new_tree[noncycle_locs[from_cycle]] = cycle_locs[metanode_deps[from_cycle]]
    new_tree[cycle_locs] = tree[cycle_locs]
    new_tree[cycle_locs[metanode_heads[cycle_head]]] = noncycle_locs[cycle_head]
    return new_tree
