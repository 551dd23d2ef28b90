"""A vectorised numpy ray caster for convex dice, with rounded edges, inks and simple materials.

The scene frame is right-handed with z up: ground plane z = 0, world x = image column and
world y = -image row at the ground.  The camera hangs at ``(cx, -cy, height)`` looking straight
down with focal length ``f`` pixels (``f == height`` keeps the ground at 1 px per unit, so
perspective is slight when ``height`` is several die sizes).

A die is cast into its own small patch, supersampled ``ss`` x ``ss``; each sample ray is
intersected with the solid's half-spaces and its rounding sphere (convex, so the entry point is
the largest entering t).  The patch comes back as coverage, colour and a transmittance for what
lies behind (translucent dice), ready for :func:`composite`.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from .geometry import Solid
from .textures import TEX


@dataclass
class Camera:
    width: int
    height: int
    cx: float
    cy: float
    f: float  # focal length in pixels; camera height = f

    @property
    def centre(self) -> np.ndarray:
        return np.array([self.cx, -self.cy, self.f])

    def project(self, pts: np.ndarray) -> np.ndarray:
        """World points (N, 3) -> pixel coordinates (N, 2) (column, row)."""
        C = self.centre
        depth = C[2] - pts[:, 2]
        px = self.cx + self.f * (pts[:, 0] - C[0]) / depth
        py = self.cy - self.f * (pts[:, 1] - C[1]) / depth
        return np.stack([px, py], axis=1)


@dataclass
class Material:
    kind: str  # opaque | translucent | marbled | metallic
    body: np.ndarray  # linear RGB 0..1
    ink: np.ndarray  # linear RGB 0..1
    body2: np.ndarray  # second colour (marbled veins)
    spec: float = 0.35  # specular strength
    shine: float = 40.0  # Blinn-Phong exponent
    opacity: float = 1.0  # < 1 for translucent bodies
    marble: tuple = ()  # (directions (K,3), freqs (K,), phases (K,), main dir (3,), main freq)
    ink_depth: float = 0.5  # how much recessed ink darkens at its rim
    sparkle: float = 0.0


@dataclass
class Light:
    direction: np.ndarray  # unit vector towards the light (world)
    colour: np.ndarray  # linear RGB multiplier
    ambient: float
    sky: float  # extra ambient from above (hemisphere)
    window: np.ndarray  # unit vector of a broad bright reflection source (for glossy surfaces)


def to_linear(rgb255) -> np.ndarray:
    return (np.asarray(rgb255, np.float32) / 255.0) ** 2.2


def to_srgb(lin: np.ndarray) -> np.ndarray:
    return np.clip(lin, 0.0, None) ** (1 / 2.2)


def _bilinear(stack: np.ndarray, fid: np.ndarray, row: np.ndarray, col: np.ndarray) -> np.ndarray:
    """Sample stack (F, S, S) at fractional (row, col) of texture fid, zero outside."""
    S = stack.shape[1]
    r0 = np.floor(row).astype(np.int32)
    c0 = np.floor(col).astype(np.int32)
    fr = (row - r0).astype(np.float32)
    fc = (col - c0).astype(np.float32)
    flat = stack.reshape(-1)
    out = np.zeros(row.shape, np.float32)
    for dr, dc, w in ((0, 0, (1 - fr) * (1 - fc)), (0, 1, (1 - fr) * fc), (1, 0, fr * (1 - fc)), (1, 1, fr * fc)):
        rr = r0 + dr
        cc = c0 + dc
        ok = (rr >= 0) & (rr < S) & (cc >= 0) & (cc < S)
        idx = fid * S * S + np.clip(rr, 0, S - 1) * S + np.clip(cc, 0, S - 1)
        out += np.where(ok, flat[idx], 0.0) * w
    return out


def _marble(p: np.ndarray, m: tuple) -> np.ndarray:
    dirs, freqs, phases, main, main_f = m
    turb = (np.sin(p @ dirs.T * freqs + phases) / np.arange(1, len(freqs) + 1)).sum(axis=1)
    x = np.sin(main_f * (p @ main) + 2.2 * turb)
    return np.clip(0.5 + 0.5 * x, 0, 1) ** 3  # thin bright veins


def _rowdot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.einsum("ij,ij->i", a, b)


_F32: dict[int, tuple] = {}


def _f32(s: Solid) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    key = id(s)
    if key not in _F32:
        _F32[key] = tuple(x.astype(np.float32) for x in (s.normals, s.centres, s.eu, s.ev))
    return _F32[key]


@dataclass
class Patch:
    x0: int
    y0: int
    cover: np.ndarray  # (h, w) 0..1 silhouette coverage
    colour: np.ndarray  # (h, w, 3) linear colour already multiplied by coverage
    trans: np.ndarray  # (h, w, 3) transmittance of the background (already times coverage)


def render_die(s: Solid, R: np.ndarray, scale: float, pos: np.ndarray, cam: Camera, mat: Material,
               masks: np.ndarray, light: Light, ss: int = 3, rng: np.random.Generator | None = None,
               round_k: float = 1.0, bevel_k: float = 1.0, glyph_k: float = 1.0) -> Patch | None:
    """Cast one die (solid ``s`` rotated by ``R``, scaled by ``scale``, centred at world ``pos``).

    ``masks`` (F, TEX, TEX) are the ink masks of its faces; ``round_k`` scales the rounding sphere
    (< 1: rounder corners), ``bevel_k`` the width of the rounded edges and ``glyph_k`` the
    printed numerals' size.  Returns None when off-image."""
    sphere = s.sphere * round_k
    bevel = s.bevel * bevel_k
    verts_w = s.vertices @ R.T * scale + pos  # the unclipped hull holds the rounded solid
    pts = cam.project(verts_w)
    x0 = int(np.floor(pts[:, 0].min())) - 1
    y0 = int(np.floor(pts[:, 1].min())) - 1
    x1 = int(np.ceil(pts[:, 0].max())) + 1
    y1 = int(np.ceil(pts[:, 1].max())) + 1
    x0, y0 = max(x0, 0), max(y0, 0)
    x1, y1 = min(x1, cam.width), min(y1, cam.height)
    if x1 <= x0 or y1 <= y0:
        return None
    w, h = x1 - x0, y1 - y0
    # only the samples inside the projected hull of the (unclipped) vertices can hit the die
    hull = cv2.convexHull(((pts - [x0, y0]) * ss).astype(np.float32)).reshape(-1, 2)
    inside = np.zeros((h * ss, w * ss), np.uint8)
    cv2.fillConvexPoly(inside, np.round(hull * 16).astype(np.int32), 1, lineType=cv2.LINE_8, shift=4)
    inside = cv2.dilate(inside, np.ones((3, 3), np.uint8))
    sel = np.flatnonzero(inside)
    gy = (y0 + (sel // (w * ss) + 0.5) / ss).astype(np.float32)
    gx = (x0 + (sel % (w * ss) + 0.5) / ss).astype(np.float32)
    # world ray directions (unnormalised, z = -1) from the camera centre
    d_w = np.stack([(gx - cam.cx) / cam.f, -(gy - cam.cy) / cam.f, -np.ones_like(gx)], axis=1).astype(np.float32)
    o_l = (R.T @ (cam.centre - pos) / scale).astype(np.float32)
    d_l = d_w @ R.astype(np.float32)  # == (R.T @ d_w.T).T
    N, C32, EU32, EV32 = _f32(s)
    nd = d_l @ N.T  # (P, F)
    num = (s.offsets - N @ o_l).astype(np.float32)  # (F,)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = num[None, :] / nd
    t_enter = np.where(nd < 0, t, np.float32(-np.inf))
    fid = np.argmax(t_enter, axis=1)
    t_in = np.take_along_axis(t_enter, fid[:, None], axis=1)[:, 0]
    t_out = np.where(nd > 0, t, np.float32(np.inf)).min(axis=1)
    a = np.einsum("ij,ij->i", d_l, d_l)
    b = 2 * d_l @ o_l
    c = float(o_l @ o_l - sphere ** 2)
    disc = b * b - 4 * a * c
    sq = np.sqrt(np.maximum(disc, 0))
    ts_in = (-b - sq) / (2 * a)
    ts_out = (-b + sq) / (2 * a)
    t_hit = np.maximum(t_in, ts_in)
    hit = (disc > 0) & (t_hit <= np.minimum(t_out, ts_out))
    P = len(sel)
    cover_s = hit.astype(np.float32)
    col_s = np.zeros((P, 3), np.float32)
    trans_s = np.zeros((P, 3), np.float32)
    if hit.any():
        idx = np.nonzero(hit)[0]
        th = t_hit[idx]
        f = fid[idx]
        p = o_l + th[:, None] * d_l[idx]  # local hit points
        # rounded edges: blend the normals of planes (and sphere) the point is close to
        gap = num[None, :] - th[:, None] * nd[idx]  # distance inside each plane (>= 0)
        wgt = np.maximum(1.0 - gap * np.float32(1.0 / bevel), 0.0)
        wgt *= wgt
        n = wgt @ N
        rp = np.sqrt(_rowdot(p, p))
        ws = np.maximum(1.0 - (sphere - rp) * np.float32(1.0 / bevel), 0.0)
        ws = np.minimum(ws * ws, 1.0) / np.maximum(rp, 1e-6)
        n += ws[:, None] * p
        n /= np.maximum(np.sqrt(_rowdot(n, n)), 1e-6)[:, None]
        # inks (nearest texel: the patch is supersampled; the masks have an empty border)
        rel = p - C32[f]
        S = masks.shape[1]
        k = np.float32(S / (s.tex_extent * glyph_k))
        col = np.minimum(np.maximum(((_rowdot(rel, EU32[f]) * k + S / 2)).astype(np.int32), 0), S - 1)
        row = np.minimum(np.maximum(((S / 2 - _rowdot(rel, EV32[f]) * k)).astype(np.int32), 0), S - 1)
        ink = masks.reshape(-1)[(f * S + row) * S + col]
        # shading in the world frame
        nw = n @ R.T.astype(np.float32)
        dw = d_w[idx]
        V = -dw / np.sqrt(_rowdot(dw, dw))[:, None]
        L = light.direction.astype(np.float32)
        ndl = nw @ L
        ink3 = ink[:, None]
        if mat.marble:
            mv = _marble(p, mat.marble)[:, None]
            body = mat.body * (1 - mv) + mat.body2 * mv
        else:
            body = mat.body[None, :]
        albedo = body + (mat.ink - body) * ink3
        hemi = light.ambient + light.sky * (0.5 + 0.5 * nw[:, 2])
        if mat.kind == "translucent":
            diff = 0.55 * np.minimum(np.maximum(ndl * 0.5 + 0.5, 0), 1) + 0.25  # wrapped: light scatters inside
        else:
            diff = np.maximum(ndl, 0)
        shade = albedo * (hemi[:, None] + diff[:, None] * light.colour)
        H = L[None, :] + V
        H /= np.sqrt(_rowdot(H, H))[:, None]
        spec_strength = mat.spec * (1 - 0.6 * ink)
        spec = spec_strength * np.maximum(_rowdot(nw, H), 0) ** np.float32(mat.shine)
        # broad reflection of a window / lamp for glossy surfaces (Fresnel-weighted)
        nv = np.maximum(_rowdot(nw, V), 0)
        rv = 2 * nv[:, None] * nw - V
        win = np.maximum(rv @ light.window.astype(np.float32), 0) ** np.float32(60)
        g = 1 - np.minimum(nv, 1)
        g2 = g * g
        fres = 0.04 + 0.96 * g2 * g2 * g
        refl = spec_strength * (0.8 * win + 0.6 * fres * (0.3 + 0.7 * np.maximum(rv[:, 2], 0)))
        if mat.kind == "metallic":
            tint = body + (1 - body) * ink3
            shade = shade * 0.45
            sp = (spec * 2.5 + refl * 2.0)[:, None] * tint * light.colour
            if mat.sparkle and rng is not None:
                sp *= 1 + mat.sparkle * rng.standard_normal((len(idx), 1), dtype=np.float32)
            shade = shade + sp
        else:
            shade = shade + (spec + refl)[:, None] * light.colour
        # recessed ink: darken the rim of the ink a little (engraving)
        if mat.ink_depth:
            rim = 4 * ink * (1 - ink)
            shade = shade * (1 - 0.35 * mat.ink_depth * rim)[:, None]
        op = np.ones(len(idx), np.float32)
        tr = np.zeros((len(idx), 3), np.float32)
        if mat.opacity < 1:
            op = 1 - (1 - mat.opacity) * nv  # more opaque at grazing angles
            op = np.maximum(op, ink)
            tint = mat.body / max(float(mat.body.max()), 1e-3)
            tr = (1 - op)[:, None] * (0.7 * tint * tint)
        col_s[idx] = shade * op[:, None]
        trans_s[idx] = tr

    def down(vals: np.ndarray) -> np.ndarray:
        full = np.zeros((h * ss * w * ss,) + vals.shape[1:], np.float32)
        full[sel] = vals
        full = full.reshape((h * ss, w * ss) + vals.shape[1:])
        return cv2.resize(full, (w, h), interpolation=cv2.INTER_AREA) if ss > 1 else full

    return Patch(x0=x0, y0=y0, cover=down(cover_s), colour=down(col_s), trans=down(trans_s))


def composite(img: np.ndarray, patch: Patch) -> None:
    """Lay a patch (linear light, premultiplied by coverage) on an sRGB float image in place.
    The die's own colour and transmittance go to sRGB per pixel; the edge blend is done in
    sRGB (as a camera's anti-aliasing roughly does)."""
    h, w = patch.cover.shape
    sl = (slice(patch.y0, patch.y0 + h), slice(patch.x0, patch.x0 + w))
    bg = img[sl]
    cov = patch.cover[..., None]
    inv = 1.0 / np.maximum(cov, 1e-4)
    col = to_srgb(patch.colour * inv) * cov
    tr = to_srgb(patch.trans * inv) * cov
    img[sl] = bg * (1 - cov) + col + tr * bg
