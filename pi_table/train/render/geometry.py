"""Die solids as intersections of half-spaces (plus a rounding sphere), with face labels.

Conventions (right-handed, z up):

* a solid is ``{x : N @ x <= D}`` intersected with the ball ``|x| <= sphere`` (rounded corners);
  ``N`` holds the outward unit face normals;
* every face has a printing frame: ``centre`` (a point on the face where the numeral is centred),
  ``eu`` (the numeral's right) and ``ev`` (the numeral's up), with ``eu = ev x n`` so that the
  numeral reads correctly, not mirrored, from outside the die;
* a die at rest lies on a face; its top face is the face whose normal points up (+z).  For a
  tilted ("cocked") die the label is the face whose normal is most +z.

Numbering:

* d6: opposite faces sum to 7 (1, 2, 3 counter-clockwise round their common corner);
* d8 (octahedron): opposite faces sum to 9; odd faces meet only at corners;
* d10 (pentagonal trapezohedron, 10 kite faces): "0".."9", opposite faces sum to 9, odd
  numbers round one apex, even round the other; numerals stand with their top towards the apex;
* d10-tens: the same solid printed "00".."90" (the tens of face ``k`` is ``k``0).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np


@dataclass(frozen=True)
class Solid:
    """A convex die: planes, printing frames and the label of every face."""

    kind: str
    vertices: np.ndarray  # (V, 3)
    faces: tuple[tuple[int, ...], ...]  # vertex indices per face, counter-clockwise from outside
    normals: np.ndarray  # (F, 3) outward unit normals
    offsets: np.ndarray  # (F,) plane offsets: n . x = d on the face
    labels: tuple[str, ...]  # printed label of each face
    centres: np.ndarray  # (F, 3) numeral centres
    eu: np.ndarray  # (F, 3) numeral right
    ev: np.ndarray  # (F, 3) numeral up
    tex_extent: float  # side (solid units) of the square texture laid on each face
    glyph_height: float  # numeral cap height in solid units
    sphere: float  # rounding sphere radius
    bevel: float  # width (solid units) of the rounded edge shading
    opposite: tuple[int, ...] = field(default=())  # index of the parallel opposite face

    @property
    def n_faces(self) -> int:
        return len(self.faces)

    def face_index(self, label: str) -> int:
        return self.labels.index(label)


def _frame(n: np.ndarray, up: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(eu, ev) on the plane with normal n, ev the projection of ``up`` on it."""
    ev = up - np.dot(up, n) * n
    ev = ev / np.linalg.norm(ev)
    eu = np.cross(ev, n)
    return eu, ev


def _opposites(normals: np.ndarray) -> tuple[int, ...]:
    dots = normals @ normals.T
    return tuple(int(i) for i in np.argmin(dots, axis=1))


def _orient_ccw(verts: np.ndarray, face: list[int], n: np.ndarray) -> tuple[int, ...]:
    """Order a face's vertices counter-clockwise seen from outside."""
    pts = verts[face]
    c = pts.mean(axis=0)
    eu, ev = _frame(n, np.array([0.3, 0.5, 0.81]) if abs(n[2]) < 0.99 else np.array([0.0, 1.0, 0.0]))
    ang = np.arctan2((pts - c) @ ev, (pts - c) @ eu)
    return tuple(int(face[i]) for i in np.argsort(ang))


def _d6() -> Solid:
    v = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
    normals = np.array([[0, 0, 1], [1, 0, 0], [0, 1, 0], [0, -1, 0], [-1, 0, 0], [0, 0, -1]], float)
    labels = ("1", "2", "3", "4", "5", "6")  # +z 1, +x 2, +y 3: 1-2-3 counter-clockwise round (1,1,1)
    faces, eus, evs = [], [], []
    for n in normals:
        idx = [i for i in range(8) if np.isclose(v[i] @ n, 1.0)]
        faces.append(_orient_ccw(v, idx, n))
        up = np.array([0.0, 1.0, 0.0]) if abs(n[2]) > 0.5 else np.array([0.0, 0.0, 1.0])
        eu, ev = _frame(n, up)
        eus.append(eu)
        evs.append(ev)
    return Solid(
        kind="d6", vertices=v, faces=tuple(faces), normals=normals, offsets=np.ones(6),
        labels=labels, centres=normals.copy(), eu=np.array(eus), ev=np.array(evs),
        tex_extent=2.0, glyph_height=0.95, sphere=1.50, bevel=0.22, opposite=_opposites(normals),
    )


def _d8() -> Solid:
    v = np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]], float)
    signs = [(sx, sy, sz) for sx in (1, -1) for sy in (1, -1) for sz in (1, -1)]
    odd = iter((1, 3, 5, 7))
    value: dict[tuple[int, int, int], int] = {}
    for s in signs:
        if s[0] * s[1] * s[2] > 0:
            value[s] = next(odd)
    for s in signs:
        if s[0] * s[1] * s[2] < 0:
            value[s] = 9 - value[(-s[0], -s[1], -s[2])]
    faces, normals, centres, eus, evs, labels = [], [], [], [], [], []
    for s in signs:
        n = np.array(s, float) / np.sqrt(3.0)
        idx = [0 if s[0] > 0 else 1, 2 if s[1] > 0 else 3, 4 if s[2] > 0 else 5]
        faces.append(_orient_ccw(v, idx, n))
        c = v[idx].mean(axis=0)
        eu, ev = _frame(n, v[idx[2]] - c)  # numeral top towards the face's z corner
        normals.append(n)
        centres.append(c - 0.04 * ev)
        eus.append(eu)
        evs.append(ev)
        labels.append(str(value[s]))
    normals = np.array(normals)
    return Solid(
        kind="d8", vertices=v, faces=tuple(faces), normals=normals, offsets=np.full(8, 1 / np.sqrt(3.0)),
        labels=tuple(labels), centres=np.array(centres), eu=np.array(eus), ev=np.array(evs),
        tex_extent=1.25, glyph_height=0.42, sphere=0.90, bevel=0.10, opposite=_opposites(normals),
    )


D10_H = 1.0  # apex height
D10_R = 0.96  # ring radius


def _d10(kind: str) -> Solid:
    h, r = D10_H, D10_R
    c36 = np.cos(np.radians(36.0))
    a = h * (1 - c36) / (1 + c36)  # ring heights +-a make the kites planar
    top, bot = np.array([0, 0, h]), np.array([0, 0, -h])
    upper = [np.array([r * np.cos(np.radians(72 * k)), r * np.sin(np.radians(72 * k)), a]) for k in range(5)]
    lower = [np.array([r * np.cos(np.radians(72 * k + 36)), r * np.sin(np.radians(72 * k + 36)), -a]) for k in range(5)]
    v = np.array([top, bot, *upper, *lower])
    T, B = 0, 1
    U = [2 + k for k in range(5)]
    L = [7 + k for k in range(5)]
    odd_round_top = (1, 7, 3, 9, 5)  # upper kite k; its opposite is lower kite k+2 with 9 - value
    faces, normals, centres, eus, evs, labels = [], [], [], [], [], []
    quads = [(T, U[k], L[k], U[(k + 1) % 5]) for k in range(5)] + [(B, L[k], U[(k + 1) % 5], L[(k + 1) % 5]) for k in range(5)]
    vals = list(odd_round_top) + [9 - odd_round_top[(k - 2) % 5] for k in range(5)]
    for q, val in zip(quads, vals):
        p = v[list(q)]
        n = np.cross(p[1] - p[0], p[3] - p[0])
        n = n / np.linalg.norm(n)
        if n @ p[0] < 0:
            n = -n
        apex = p[0]
        wide = 0.5 * (p[1] + p[3])  # mid-point of the kite's wide diagonal
        eu, ev = _frame(n, apex - wide)
        faces.append(_orient_ccw(v, list(q), n))
        normals.append(n)
        centres.append(wide + 0.20 * (apex - wide))
        eus.append(eu)
        evs.append(ev)
        labels.append(f"{val}0" if kind == "d10-tens" else str(val))
    normals = np.array(normals)
    offsets = np.array([normals[i] @ v[quads[i][0]] for i in range(10)])
    return Solid(
        kind=kind, vertices=v, faces=tuple(faces), normals=normals, offsets=offsets,
        labels=tuple(labels), centres=np.array(centres), eu=np.array(eus), ev=np.array(evs),
        tex_extent=1.3, glyph_height=0.40 if kind == "d10" else 0.30, sphere=0.93, bevel=0.09,
        opposite=_opposites(normals),
    )


@lru_cache(maxsize=None)
def solid(kind: str) -> Solid:
    """The solid of a die kind: d6, d8, d10 or d10-tens."""
    if kind == "d6":
        return _d6()
    if kind == "d8":
        return _d8()
    if kind in ("d10", "d10-tens"):
        return _d10(kind)
    raise ValueError(f"no solid for kind {kind!r}")


def rot_to(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Rotation matrix taking unit vector a onto unit vector b."""
    a = a / np.linalg.norm(a)
    b = b / np.linalg.norm(b)
    v = np.cross(a, b)
    c = float(a @ b)
    if c < -1 + 1e-9:  # opposite: turn half a turn round any perpendicular axis
        axis = np.cross(a, [1.0, 0, 0])
        if np.linalg.norm(axis) < 1e-6:
            axis = np.cross(a, [0, 1.0, 0])
        return axis_angle(axis, np.pi)
    vx = np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])
    return np.eye(3) + vx + vx @ vx / (1 + c)


def axis_angle(axis, angle: float) -> np.ndarray:
    axis = np.asarray(axis, float)
    axis = axis / np.linalg.norm(axis)
    x, y, z = axis
    c, s = np.cos(angle), np.sin(angle)
    C = 1 - c
    return np.array([
        [c + x * x * C, x * y * C - z * s, x * z * C + y * s],
        [y * x * C + z * s, c + y * y * C, y * z * C - x * s],
        [z * x * C - y * s, z * y * C + x * s, c + z * z * C],
    ])


def rest_pose(s: Solid, face: int, yaw: float, tilt: float = 0.0, tilt_dir: float = 0.0) -> np.ndarray:
    """Rotation (solid -> world) with ``face`` pointing up, turned by ``yaw`` round z, then
    tilted by ``tilt`` radians round the horizontal axis at azimuth ``tilt_dir`` (cocked die)."""
    R = rot_to(s.normals[face], np.array([0.0, 0.0, 1.0]))
    R = axis_angle([0, 0, 1], yaw) @ R
    if tilt:
        R = axis_angle([np.cos(tilt_dir), np.sin(tilt_dir), 0.0], tilt) @ R
    return R


def up_face(s: Solid, R: np.ndarray) -> int:
    """Index of the face whose world normal is most +z."""
    return int(np.argmax((s.normals @ R.T)[:, 2]))


@lru_cache(maxsize=None)
def hull_points(kind: str) -> np.ndarray:
    """Points on the rounded solid's edges and corners (K, 3): their convex hull is the solid's
    (to a fraction of a percent), for outlines, resting height and size."""
    s = solid(kind)
    pts = []
    inside_ball = lambda p: p[np.linalg.norm(p, axis=1) <= s.sphere + 1e-9]
    inside_poly = lambda p: p[np.all(p @ s.normals.T <= s.offsets + 1e-9, axis=1)]
    pts.append(inside_ball(s.vertices))
    t = np.linspace(0, 1, 41)[:, None]
    for f in s.faces:
        for a, b in zip(f, f[1:] + f[:1]):
            pts.append(inside_ball(s.vertices[a] * (1 - t) + s.vertices[b] * t))
        # the circle where the face plane meets the sphere
        i = s.faces.index(f)
        n, d = s.normals[i], s.offsets[i]
        if d < s.sphere:
            r = np.sqrt(s.sphere ** 2 - d ** 2)
            eu, ev = _frame(n, np.array([0.3, 0.5, 0.81]) if abs(n[2]) < 0.99 else np.array([0.0, 1.0, 0.0]))
            ang = np.linspace(0, 2 * np.pi, 181)[:, None]
            pts.append(inside_poly(n * d + r * (np.cos(ang) * eu + np.sin(ang) * ev)))
    # the sphere where it bounds the solid (corners)
    k = np.arange(4000) + 0.5
    phi = np.arccos(1 - 2 * k / 4000)
    th = np.pi * (1 + 5 ** 0.5) * k
    sph = s.sphere * np.stack([np.cos(th) * np.sin(phi), np.sin(th) * np.sin(phi), np.cos(phi)], axis=1)
    pts.append(inside_poly(sph))
    return np.concatenate([p for p in pts if len(p)])
