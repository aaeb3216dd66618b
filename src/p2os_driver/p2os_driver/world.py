"""The emulator's world: ARIA `.map` and ROS map files, ray casting, contact
(docs/protocols/p2os.md §5, whose section numbers the § below refer to).

Pure code, no I/O but file reading, no rclpy. World units are mm and radians.

A World holds two kinds of solid primitive, each with the Stage returns of §5.2
(laser_return, seen by sonar, an obstacle to motion):
- segments (x1, y1, x2, y2): ArMap LINES, reflectors, sector boxes, a room's walls;
- axis-aligned boxes (xmin, ymin, xmax, ymax): ArMap DATA points and occupied ROS map cells.

Two geometries: `exact` (default) takes the lines as drawn and each point as a square of the
map's Resolution centred on it; `grid` is AMRISim's: every line and point marks the grid cells
[i·r, (i+1)·r) it touches, so a ray stops where it enters a cell (a wall at x = -1000 seen
from +x reads 20 mm short). Rays are cast for all rays at once with NumPy over a bucket index
(a coarse grid listing the primitives in each bucket), a few chunks of buckets per call.
"""

import dataclasses
import math
import os
import re
import shlex
from typing import List, Optional, Tuple

import numpy as np

from legacy_robot_common.errors import WorldError

CATEGORIES = ('2D-Map', '2D-Map-Ex', '2D-Map-Ex2', '2D-Map-Ex3', '2D-Map-Ex4')
HEADER_KEYS = {
    'minpos': 'MinPos',
    'maxpos': 'MaxPos',
    'numpoints': 'NumPoints',
    'pointsaresorted': 'PointsAreSorted',
    'lineminpos': 'LineMinPos',
    'linemaxpos': 'LineMaxPos',
    'numlines': 'NumLines',
    'linesaresorted': 'LinesAreSorted',
    'resolution': 'Resolution',
    'display': 'Display',
    'sources': 'Sources',
    'originlatlongalt': 'OriginLatLongAlt',
}
INFO_KEYS = (
    'MapInfo',
    'MacroInfo',
    'MetaInfo',
    'TaskInfo',
    'RouteInfo',
    'SchedTaskInfo',
    'SchedInfo',
    'CairnInfo',
    'CustomInfo',
)
MAX_COORDINATE = 10_000_000  # mm (10 km): anything larger is a broken file, not a building
# side of the ray-casting index's buckets (mm): the largest of these that holds at most
# BUCKET_LOAD primitives per occupied bucket on average (a dense scanned map gets small ones)
BUCKETS = (500.0, 250.0, 125.0)
BUCKET_LOAD = 16
# up to this many primitives (an office floor drawn in lines) a ray is tested against every one
# at once: a few array operations instead of the index's dozens, each of which costs more than
# the arithmetic on so few primitives
EVERY_PRIMITIVE = 512
# (ray, primitive) pairs intersected at once: each of the two dozen temporary arrays stays under
# the C library's 128 KiB mmap threshold, so it reuses heap memory instead of being mapped and
# page-faulted anew (a dense map's scan has 20,000-40,000 pairs: that was half its CPU, in the
# kernel)
PAIRS_AT_ONCE = 8192
_DATA_LINE = re.compile(r'-?\d{1,18}[ \t]+-?\d{1,18}[ \t]*\Z')
_LINES_LINE = re.compile(r'-?\d{1,18}(?:[ \t]+-?\d{1,18}){3}[ \t]*\Z')


@dataclasses.dataclass
class Cairn:
    type: str
    x: float  # mm
    y: float
    th: float  # degrees
    name: str = ''
    label: str = ''
    from_to: Optional[Tuple[float, float, float, float]] = None
    description: str = ''


@dataclasses.dataclass
class ArMap:
    """An ARIA map file as read (ARIA's rules, §5.1)."""

    category: str = '2D-Map'
    header: dict = dataclasses.field(default_factory=dict)  # canonical key → list of args
    points: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros((0, 2), np.int64))
    lines: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros((0, 4), np.int64))
    cairns: List[Cairn] = dataclasses.field(default_factory=list)
    info: List[Tuple[str, List[str]]] = dataclasses.field(default_factory=list)
    skipped: int = 0  # malformed lines skipped, as ARIA does
    skipped_examples: List[str] = dataclasses.field(default_factory=list)  # (line number: text)

    @property
    def resolution(self):
        args = self.header.get('Resolution')
        try:
            value = float(args[0]) if args else 0.0
        except ValueError:
            value = 0.0
        return value if value > 0 else 20.0

    def sector_types(self):
        """{type name: {attribute: value}} from `MapInfo: SectorType Name=... Attr=...`."""
        types = {}
        for key, args in self.info:
            if key == 'MapInfo' and args and args[0] == 'SectorType':
                attributes = dict(a.split('=', 1) for a in args[1:] if '=' in a)
                name = attributes.pop('Name', None)
                if name:
                    types[name] = attributes
        return types

    def start_pose(self):
        """(x mm, y mm, th rad) of the first RobotHome, else the first Dock, else the origin."""
        for kind in ('robothome', 'dock'):
            for cairn in self.cairns:
                if cairn.type.lower() == kind:
                    return (cairn.x, cairn.y, math.radians(cairn.th))
        return (0.0, 0.0, 0.0)

    def forbidden(self):
        """ForbiddenLine / ForbiddenArea cairns: kept as data, never walls."""
        return [c for c in self.cairns if c.type in ('ForbiddenLine', 'ForbiddenArea')]


def parse_armap(text):
    """ArMap text → ArMap. Raises WorldError when the text is not a map at all."""
    lines = text.splitlines()
    if not lines or lines[0].strip() not in CATEGORIES:
        first = lines[0][:40] if lines else ''
        raise WorldError(
            f'not an ARIA map: the first line is {first!r}, not one of {", ".join(CATEGORIES)}'
        )
    result = ArMap(category=lines[0].strip())
    section = None
    points, segments = [], []
    for number, raw in enumerate(lines[1:], start=2):
        line = raw.rstrip('\r\n')
        if not line.strip():
            continue
        tag = line.split()[0].upper()
        if tag in ('DATA', 'LINES') or re.fullmatch(r'\w+_(DATA|LINES)', tag):
            section = ('DATA' if tag.endswith('DATA') else 'LINES', tag in ('DATA', 'LINES'))
            continue
        if section is not None:
            kind, default_source = section
            if not (_DATA_LINE if kind == 'DATA' else _LINES_LINE).match(line):
                _skip(result, number, line)  # ARIA: digits and a leading '-' only, no blanks first
            elif default_source:  # another sensor's data is not solid (§5.2)
                (points if kind == 'DATA' else segments).append(line)
            continue
        _parse_metadata(result, number, line)
    result.points = _numbers(result, points, 2)
    result.lines = _numbers(result, segments, 4)
    return result


def _numbers(result, lines, width):
    """The validated data lines as an int array; rows with absurd coordinates are skipped."""
    values = np.array(' '.join(lines).split(), dtype=np.int64).reshape(-1, width)
    absurd = (np.abs(values) > MAX_COORDINATE).any(axis=1)
    result.skipped += int(absurd.sum())
    for i in np.nonzero(absurd)[0][: max(0, 5 - len(result.skipped_examples))]:
        result.skipped_examples.append(f'{lines[i][:60]} (over 10 km)')
    return values[~absurd]


def _skip(result, number, line):
    result.skipped += 1
    if len(result.skipped_examples) < 5:
        result.skipped_examples.append(f'{number}: {line[:60]}')


def _parse_metadata(result, number, line):
    if ':' not in line:
        _skip(result, number, line)
        return
    key, _, rest = line.partition(':')
    key = key.strip()
    try:
        args = shlex.split(rest, posix=True)
    except ValueError:
        _skip(result, number, line)
        return
    lowered = key.lower()
    if lowered == 'cairn':
        cairn = _cairn(args)
        if cairn is None:
            _skip(result, number, line)
        else:
            result.cairns.append(cairn)
    elif lowered in HEADER_KEYS:
        result.header[HEADER_KEYS[lowered]] = args
    else:
        for info in INFO_KEYS:
            if lowered == info.lower():
                result.info.append((info, args))
                break  # other keywords: silently ignored, as ARIA does


def _cairn(args):
    """`Cairn: Type X Y Th "internal" ICON "label" [x1 y1 x2 y2] ["desc"]` → Cairn or None."""
    if len(args) < 7:
        return None
    try:
        x, y, th = (float(v) for v in args[1:4])
        from_to = tuple(float(v) for v in args[7:11]) if len(args) >= 11 else None
    except ValueError:
        return None
    if not all(math.isfinite(v) and abs(v) <= MAX_COORDINATE for v in (x, y, th)):
        return None
    description = args[11] if len(args) > 11 else ''
    return Cairn(args[0], x, y, th, args[4], args[6], from_to, description)


def write_armap(armap):
    """ArMap → text ARIA reads (header counts and bounds from the data)."""
    out = [armap.category]
    header = dict(armap.header)
    pts, lns = armap.points, armap.lines
    if len(pts):
        header['MinPos'] = [str(v) for v in pts.min(axis=0)]
        header['MaxPos'] = [str(v) for v in pts.max(axis=0)]
    header['NumPoints'] = [str(len(pts))]
    if len(lns):
        ends = lns.reshape(-1, 2)
        header['LineMinPos'] = [str(v) for v in ends.min(axis=0)]
        header['LineMaxPos'] = [str(v) for v in ends.max(axis=0)]
    header['NumLines'] = [str(len(lns))]
    for key in HEADER_KEYS.values():
        if key in header:
            out.append(f'{key}: {" ".join(header[key])}')
    for key, args in armap.info:
        out.append(f'{key}: {" ".join(_quote(a) for a in args)}')
    for c in armap.cairns:
        text = f'Cairn: {c.type} {c.x:g} {c.y:g} {c.th:g} "{c.name}" ICON "{c.label}"'
        if c.from_to:
            text += ' ' + ' '.join(f'{v:g}' for v in c.from_to)
        out.append(text)
    out.append('LINES')
    out += [' '.join(str(v) for v in row) for row in lns.tolist()]
    out.append('DATA')
    out += [f'{x} {y}' for x, y in pts.tolist()]
    return '\n'.join(out) + '\n'


def _quote(arg):
    return f'"{arg}"' if (' ' in arg or not arg) else arg


# ---- ROS map_server maps -----------------------------------------------------------
def read_ros_map(yaml_path):
    """map.yaml + PGM/PNG → (occupied bool array, row 0 = lowest y; resolution m; origin m)."""
    import yaml

    try:
        with open(yaml_path, encoding='utf-8') as f:
            spec = yaml.safe_load(f)
    except yaml.YAMLError as exc:
        raise WorldError(f'{yaml_path}: not YAML: {exc}') from None
    if not isinstance(spec, dict) or 'image' not in spec or 'resolution' not in spec:
        raise WorldError(f'{yaml_path}: a ROS map needs the keys image and resolution')
    try:
        resolution = float(spec['resolution'])
        origin = [float(v) for v in spec.get('origin', [0.0, 0.0, 0.0])][:3]
        negate = int(spec.get('negate', 0))
        occupied_thresh = float(spec.get('occupied_thresh', 0.65))
    except (TypeError, ValueError) as exc:
        raise WorldError(f'{yaml_path}: bad value: {exc}') from None
    if not 0 < resolution <= 10 or len(origin) < 2:
        raise WorldError(f'{yaml_path}: resolution must be within (0, 10] m, origin [x, y, yaw]')
    if any(abs(v) * 1000 > MAX_COORDINATE for v in origin[:2]):
        raise WorldError(f'{yaml_path}: origin {origin[:2]} is absurdly far (over 10 km)')
    image = os.path.join(os.path.dirname(os.path.abspath(yaml_path)), str(spec['image']))
    pixels = read_image(image)
    occupancy = (255 - pixels) / 255.0 if not negate else pixels / 255.0
    occupied = np.flipud(occupancy > occupied_thresh)
    return occupied, resolution, (origin[0], origin[1])


def read_image(path):
    """Grey levels (uint8, row 0 at the top) of a PGM (checked against its header) or PNG."""
    try:
        with open(path, 'rb') as f:
            data = f.read()
    except OSError as exc:
        raise WorldError(f'cannot read the map image: {exc}') from None
    if data[:2] in (b'P5', b'P2'):
        return _read_pgm(path, data)
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as img:
            return np.asarray(img.convert('L'))
    except (UnidentifiedImageError, OSError) as exc:
        raise WorldError(f'{path}: not a PGM or PNG image: {exc}') from None


def _read_pgm(path, data):
    tokens, offset = [], 2
    while len(tokens) < 3:
        match = re.compile(rb'\s*(#[^\n]*\n\s*)*(\d+)').match(data, offset)
        if not match:
            raise WorldError(f'{path}: broken PGM header')
        tokens.append(int(match.group(2)))
        offset = match.end()
    width, height, maxval = tokens
    if not (0 < width <= 100_000 and 0 < height <= 100_000 and 0 < maxval < 65536):
        raise WorldError(f'{path}: PGM header says {width}x{height}, maxval {maxval}')
    if data[:2] == b'P2':
        values = np.array(data[offset:].split(), dtype=np.int64)
    else:
        size = 1 if maxval < 256 else 2
        raw = data[offset + 1 :]
        values = np.frombuffer(raw, dtype=np.uint8 if size == 1 else '>u2')
        if len(raw) != width * height * size:
            raise WorldError(
                f'{path}: PGM header says {width}x{height} ({width * height * size} bytes), '
                f'the file holds {len(raw)}'
            )
    if len(values) != width * height:
        raise WorldError(
            f'{path}: PGM header says {width}x{height} pixels, the file holds {len(values)}'
        )
    return (values.reshape(height, width).astype(np.int64) * 255 // maxval).astype(np.uint8)


def write_ros_map(world, yaml_path, resolution=0.05):
    """World → map.yaml + PGM beside it (occupied 0, free 254, unknown outside nothing)."""
    grid, origin = world.occupancy(resolution)
    pgm_path = os.path.splitext(yaml_path)[0] + '.pgm'
    height, width = grid.shape
    image = np.where(np.flipud(grid) > 50, 0, 254).astype(np.uint8)
    with open(pgm_path, 'wb') as f:
        f.write(f'P5\n{width} {height}\n255\n'.encode() + image.tobytes())
    with open(yaml_path, 'w', encoding='utf-8') as f:
        f.write(
            f'image: {os.path.basename(pgm_path)}\nmode: trinary\nresolution: {resolution}\n'
            f'origin: [{origin[0]:.4f}, {origin[1]:.4f}, 0.0]\nnegate: 0\n'
            'occupied_thresh: 0.65\nfree_thresh: 0.25\n'
        )
    return pgm_path


# ---- the world -------------------------------------------------------------------
@dataclasses.dataclass
class Contact:
    clearance: float  # mm from the robot's centre to the nearest obstacle
    bearing: float  # rad, direction of that obstacle in the world frame


class World:
    """Solid primitives with returns, a bucket index, a start pose and the map's metadata."""

    def __init__(
        self,
        segments=(),
        boxes=(),
        segment_returns=None,
        box_returns=None,
        start=(0.0, 0.0, 0.0),
        armap=None,
        name='world',
    ):
        self.segments = np.asarray(segments, np.float64).reshape(-1, 4)
        self.boxes = np.asarray(boxes, np.float64).reshape(-1, 4)
        # returns per primitive: (laser_return, seen by sonar, obstacle)
        self.segment_returns = _returns(segment_returns, len(self.segments))
        self.box_returns = _returns(box_returns, len(self.boxes))
        self.start = tuple(float(v) for v in start)
        self.armap = armap
        self.name = name
        if not len(self.segments) and not len(self.boxes):
            raise WorldError(f'{name}: the map has no walls (no lines, no points)')
        self._build_index()
        self.every_primitive = len(self.segments) + len(self.boxes) <= EVERY_PRIMITIVE
        self._seen_by = {}  # sensor column → _Solids, made at its first cast

    # ---- construction --------------------------------------------------------------
    @classmethod
    def room(cls, width, height):
        """A rectangular room of width × height mm centred on the origin (`--room`)."""
        w, h = width / 2, height / 2
        corners = [(-w, -h), (w, -h), (w, h), (-w, h)]
        walls = [(*corners[i], *corners[(i + 1) % 4]) for i in range(4)]
        return cls(walls, name=f'room {width / 1000:g}x{height / 1000:g} m')

    @classmethod
    def from_armap(cls, armap, geometry='exact', name='map'):
        r = armap.resolution
        segments = [armap.lines.astype(np.float64)]
        returns = [np.tile([1, 1, 1], (len(armap.lines), 1))]
        sectors = armap.sector_types()
        for c in armap.cairns:
            if not c.from_to:
                continue
            if c.type == 'Reflector':
                quad = _strip(c.from_to, 20.0)
                segments.append(quad)
                returns.append(np.tile([2, 1, 1], (4, 1)))
            elif c.type in sectors:
                segments.append(_sector_box(c))
                returns.append(np.tile(_sector_returns(sectors[c.type]), (4, 1)))
        seg = np.concatenate(segments)
        seg_returns = np.concatenate(returns).astype(np.int64)
        pts = armap.points.astype(np.float64)
        if geometry == 'grid':
            # AMRISim: the map's lines and points become the cells they touch; reflectors and
            # sectors stay polygons with their own returns
            plain = seg_returns[:, 0] == 1
            plain &= np.arange(len(seg)) < len(armap.lines)
            cells = np.concatenate([_line_cells(seg[plain], 20.0), _point_cells(pts, 20.0)])
            boxes = _merged_squares(cells * 20.0 + 10.0, 20.0)
            seg, seg_returns = seg[~plain], seg_returns[~plain]
        elif geometry == 'exact':
            boxes = _merged_squares(pts, r)
        else:
            raise WorldError(f'geometry must be exact or grid, not {geometry!r}')
        return cls(seg, boxes, seg_returns, None, armap.start_pose(), armap, name)

    @classmethod
    def from_occupancy(cls, occupied, resolution_m, origin_m, name='map'):
        """Occupied cells (row 0 = lowest y) → one box each."""
        rows, cols = np.nonzero(occupied)
        r = resolution_m * 1000.0
        x0, y0 = origin_m[0] * 1000.0, origin_m[1] * 1000.0
        boxes = np.stack([x0 + cols * r, y0 + rows * r, x0 + (cols + 1) * r, y0 + (rows + 1) * r])
        return cls((), boxes.T, name=name)

    def bounds(self):
        """(xmin, ymin, xmax, ymax) of everything solid, mm."""
        parts = [self.segments[:, [0, 1]], self.segments[:, [2, 3]]]
        parts += [self.boxes[:, :2], self.boxes[:, 2:]]
        allpts = np.concatenate(parts)
        return (*allpts.min(axis=0), *allpts.max(axis=0))

    def _build_index(self):
        xmin, ymin, xmax, ymax = self.bounds()
        centres = np.concatenate(
            [
                (self.segments[:, :2] + self.segments[:, 2:]) / 2,
                (self.boxes[:, :2] + self.boxes[:, 2:]) / 2,
            ]
        )
        for size in BUCKETS:
            cells = np.unique(np.floor(centres / size).astype(np.int64), axis=0)
            if len(centres) <= BUCKET_LOAD * len(cells):
                break
        self.bucket = size
        self.sample = size / 4  # mm between the points where a ray looks up a bucket
        self.origin = np.array([xmin - 2 * size, ymin - 2 * size])
        self.shape = (
            int((xmax - xmin) // size) + 5,
            int((ymax - ymin) // size) + 5,
        )
        # long segments are cut into bucket-sized pieces so each lists only buckets it can touch
        seg_ids, pieces = _pieces(self.segments, size)
        prim_boxes = np.concatenate(
            [
                np.stack(
                    [
                        np.minimum(pieces[:, 0], pieces[:, 2]),
                        np.minimum(pieces[:, 1], pieces[:, 3]),
                        np.maximum(pieces[:, 0], pieces[:, 2]),
                        np.maximum(pieces[:, 1], pieces[:, 3]),
                    ],
                    axis=1,
                ),
                self.boxes,
            ]
        )
        prim_ids = np.concatenate([seg_ids, len(self.segments) + np.arange(len(self.boxes))])
        margin = self.sample / 2  # see _ray_buckets
        lo = np.floor((prim_boxes[:, :2] - margin - self.origin) / size).astype(np.int64)
        hi = np.floor((prim_boxes[:, 2:] + margin - self.origin) / size).astype(np.int64)
        span = hi - lo + 1
        count = span[:, 0] * span[:, 1]
        owner = np.repeat(np.arange(len(prim_ids)), count)
        k = np.arange(len(owner)) - np.repeat(np.cumsum(count) - count, count)
        bx = lo[owner, 0] + k % span[owner, 0]
        by = lo[owner, 1] + k // span[owner, 0]
        bucket = bx * self.shape[1] + by
        nprims = len(self.segments) + len(self.boxes)
        keys = np.unique(bucket * nprims + prim_ids[owner])
        self._bucket_prims = keys % nprims
        total = self.shape[0] * self.shape[1]
        self._bucket_start = np.searchsorted(keys // nprims, np.arange(total + 1))
        self._returns = np.concatenate([self.segment_returns, self.box_returns])

    # ---- ray casting ---------------------------------------------------------------
    def cast(self, x, y, angles, max_range, sensor='laser', min_range=0.0):
        """Distances (mm) from (x, y) along each angle to the first primitive the sensor sees,
        max_range where none; and the hit primitive's laser return (0 for none) and the
        incidence angle (rad, 0 = head-on). x, y scalars or arrays like angles."""
        angles = np.atleast_1d(np.asarray(angles, np.float64))
        n = len(angles)
        ox = np.broadcast_to(np.asarray(x, np.float64), (n,)).copy()
        oy = np.broadcast_to(np.asarray(y, np.float64), (n,)).copy()
        dx, dy = np.cos(angles), np.sin(angles)
        column = {'laser': 0, 'sonar': 1, 'obstacle': 2}[sensor]
        max_range = float(max_range)
        if self.every_primitive:
            best, best_ret, best_inc = self._solids(column).cast(ox, oy, angles, max_range)
            return np.maximum(best, min_range), best_ret, best_inc
        best = np.full(n, max_range)
        best_ret = np.zeros(n, np.int64)
        best_inc = np.zeros(n)
        rays = np.arange(n)
        start, length = 0.0, 6000.0
        with np.errstate(divide='ignore', invalid='ignore', over='ignore'):
            # windows of growing length along the rays: most rays end in the first one
            while len(rays) and start < max_range:
                end = min(max_range, start + length)
                self._cast_window(
                    ox, oy, dx, dy, rays, start, end, column, best, best_ret, best_inc
                )
                rays = rays[best[rays] >= end]
                start, length = end, length * 4
        return np.maximum(best, min_range), best_ret, best_inc

    def _solids(self, column):
        solids = self._seen_by.get(column)
        if solids is None:
            solids = self._seen_by[column] = _Solids(self, column)
        return solids

    def _cast_window(self, ox, oy, dx, dy, rays, start, end, column, best, ret, inc):
        """Hits of the given rays between t = start and end, merged into best / ret / inc."""
        buckets = self._ray_buckets(
            ox[rays] + start * dx[rays],
            oy[rays] + start * dy[rays],
            dx[rays],
            dy[rays],
            end - start,
        )
        valid = buckets >= 0
        ray_of = np.repeat(rays, valid.sum(axis=1))
        buckets = buckets[valid]
        count = self._bucket_start[buckets + 1] - self._bucket_start[buckets]
        if not count.any():
            return
        ray_of = np.repeat(ray_of, count)
        prims = self._gather(buckets)
        keep = self._returns[prims, column] != 0
        ray_of, prims = ray_of[keep], prims[keep]
        t, angle = np.empty(len(prims)), np.empty(len(prims))
        for part in range(0, len(prims), PAIRS_AT_ONCE):
            pairs = slice(part, part + PAIRS_AT_ONCE)
            r = ray_of[pairs]
            t[pairs], angle[pairs] = self._intersect(ox[r], oy[r], dx[r], dy[r], prims[pairs])
        hit = t < best[ray_of]
        if not hit.any():
            return
        r, t, angle, prims = ray_of[hit], t[hit], angle[hit], prims[hit]
        order = np.lexsort((t, r))
        r, t, angle, prims = r[order], t[order], angle[order], prims[order]
        head = np.r_[True, r[1:] != r[:-1]]
        r, t, angle, prims = r[head], t[head], angle[head], prims[head]
        best[r] = t
        ret[r] = self._returns[prims, 0]
        inc[r] = angle

    def _ray_buckets(self, ox, oy, dx, dy, length):
        """Bucket ids each ray passes within length of its origin (-1 = none / repeated).

        The rays are sampled every self.sample mm; each primitive is listed in the buckets its
        box widened by half that touches, so the bucket of the sample nearest any point of a ray
        lists every primitive at that point: no primitive is missed, with no per-ray walk."""
        count = int(math.ceil(length / self.sample)) + 1
        t = np.linspace(0.0, length, count)
        size = self.bucket
        bx = np.floor((ox[:, None] - self.origin[0] + dx[:, None] * t) / size).astype(np.int64)
        by = np.floor((oy[:, None] - self.origin[1] + dy[:, None] * t) / size).astype(np.int64)
        ids = bx * self.shape[1] + by
        inside = (bx >= 0) & (bx < self.shape[0]) & (by >= 0) & (by < self.shape[1])
        inside[:, 1:] &= ids[:, 1:] != ids[:, :-1]
        return np.where(inside, ids, -1)

    def _gather(self, buckets):
        """The primitives listed in the given buckets, concatenated."""
        first = self._bucket_start[buckets]
        count = self._bucket_start[buckets + 1] - first
        offsets = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
        return self._bucket_prims[np.repeat(first, count) + offsets]

    def _intersect(self, ox, oy, dx, dy, prims):
        """Ray parameter t of each (ray, primitive) pair (inf for a miss) and the incidence."""
        t = np.full(len(prims), np.inf)
        inc = np.zeros(len(prims))
        nseg = len(self.segments)
        is_seg = prims < nseg
        if is_seg.any():
            s = self.segments[prims[is_seg]]
            ex, ey = s[:, 2] - s[:, 0], s[:, 3] - s[:, 1]
            wx, wy = s[:, 0] - ox[is_seg], s[:, 1] - oy[is_seg]
            ddx, ddy = dx[is_seg], dy[is_seg]
            denom = ddx * ey - ddy * ex
            ts = (wx * ey - wy * ex) / denom
            us = (wx * ddy - wy * ddx) / denom
            ok = (np.abs(denom) > 1e-12) & (ts >= 0) & (us >= -1e-9) & (us <= 1 + 1e-9)
            t[is_seg] = np.where(ok, ts, np.inf)
            length = np.hypot(ex, ey)
            sin_graze = np.abs(denom) / length  # |sin| of the ray-segment angle
            inc[is_seg] = np.arccos(np.clip(np.nan_to_num(sin_graze), 0.0, 1.0))
        is_box = ~is_seg
        if is_box.any():
            b = self.boxes[prims[is_box] - nseg]
            px, py, ddx, ddy = ox[is_box], oy[is_box], dx[is_box], dy[is_box]
            t1x, t2x = (b[:, 0] - px) / ddx, (b[:, 2] - px) / ddx
            t1y, t2y = (b[:, 1] - py) / ddy, (b[:, 3] - py) / ddy
            # a ray parallel to a slab: inside it means no limit, outside means a miss
            inx = (px >= b[:, 0]) & (px < b[:, 2])
            iny = (py >= b[:, 1]) & (py < b[:, 3])
            lo_x = np.where(ddx == 0, np.where(inx, -np.inf, np.inf), np.minimum(t1x, t2x))
            hi_x = np.where(ddx == 0, np.where(inx, np.inf, -np.inf), np.maximum(t1x, t2x))
            lo_y = np.where(ddy == 0, np.where(iny, -np.inf, np.inf), np.minimum(t1y, t2y))
            hi_y = np.where(ddy == 0, np.where(iny, np.inf, -np.inf), np.maximum(t1y, t2y))
            enter = np.maximum(lo_x, lo_y)
            leave = np.minimum(hi_x, hi_y)
            ok = (enter < leave) & (leave > 0)
            t[is_box] = np.where(ok, np.maximum(enter, 0.0), np.inf)
            inc[is_box] = np.where(lo_x > lo_y, np.arccos(np.abs(ddx)), np.arccos(np.abs(ddy)))
        return t, inc

    # ---- contact -------------------------------------------------------------------
    def contact(self, x, y, radius):
        """Nearest obstacle within radius of (x, y): Contact, or None when clear."""
        nearest = self.nearest(x, y, radius)
        return nearest if nearest.clearance < radius else None

    def nearest(self, x, y, reach):
        """The nearest obstacle to (x, y) as a Contact; clearance = reach when none is closer."""
        if self.every_primitive:
            return self._solids(2).nearest(x, y, reach)
        radius = reach
        lo = np.floor((np.array([x, y]) - radius - self.origin) / self.bucket).astype(int)
        hi = np.floor((np.array([x, y]) + radius - self.origin) / self.bucket).astype(int)
        lo = np.maximum(lo, 0)
        hi = np.minimum(hi, np.array(self.shape) - 1)
        if (hi < lo).any():
            return Contact(float(reach), 0.0)
        bx = np.arange(lo[0], hi[0] + 1)
        by = np.arange(lo[1], hi[1] + 1)
        buckets = (bx[:, None] * self.shape[1] + by).ravel()
        prims = self._gather(buckets)  # repeats are harmless: the nearest is the minimum
        prims = prims[self._returns[prims, 2] != 0]
        if not len(prims):
            return Contact(float(reach), 0.0)
        nseg = len(self.segments)
        cx, cy = np.full(len(prims), np.nan), np.full(len(prims), np.nan)
        is_seg = prims < nseg
        s = self.segments[prims[is_seg]]
        ex, ey = s[:, 2] - s[:, 0], s[:, 3] - s[:, 1]
        with np.errstate(divide='ignore', invalid='ignore'):
            u = ((x - s[:, 0]) * ex + (y - s[:, 1]) * ey) / (ex * ex + ey * ey)
        u = np.clip(np.nan_to_num(u), 0.0, 1.0)
        cx[is_seg], cy[is_seg] = s[:, 0] + u * ex, s[:, 1] + u * ey
        b = self.boxes[prims[~is_seg] - nseg]
        cx[~is_seg] = np.clip(x, b[:, 0], b[:, 2])
        cy[~is_seg] = np.clip(y, b[:, 1], b[:, 3])
        distance = np.hypot(cx - x, cy - y)
        i = int(np.argmin(distance))
        if distance[i] >= reach:
            return Contact(float(reach), 0.0)
        return Contact(float(distance[i]), math.atan2(cy[i] - y, cx[i] - x))

    def clearance(self, x, y, radius):
        """Distance to the nearest obstacle, capped at radius."""
        c = self.contact(x, y, radius)
        return radius if c is None else c.clearance

    # ---- for viewers ---------------------------------------------------------------
    def occupancy(self, resolution=0.05, margin=0.5):
        """(int8 grid, row 0 = lowest y, 100 occupied / 0 free; origin (x, y) in m)."""
        r = resolution * 1000.0
        xmin, ymin, xmax, ymax = self.bounds()
        x0, y0 = xmin - margin * 1000.0, ymin - margin * 1000.0
        width = int(math.ceil((xmax - x0 + margin * 1000.0) / r))
        height = int(math.ceil((ymax - y0 + margin * 1000.0) / r))
        grid = np.zeros((height, width), np.int8)
        shifted = self.segments - np.array([x0, y0, x0, y0])
        cells = _line_cells(shifted[self.segment_returns[:, 2] != 0], r)
        b = self.boxes[self.box_returns[:, 2] != 0] - np.array([x0, y0, x0, y0])
        centres = (b[:, :2] + b[:, 2:]) / 2
        cells = np.concatenate([cells, np.floor(centres / r).astype(np.int64)])
        ok = (cells[:, 0] >= 0) & (cells[:, 0] < width) & (cells[:, 1] >= 0)
        ok &= cells[:, 1] < height
        grid[cells[ok, 1], cells[ok, 0]] = 100
        return grid, (x0 / 1000.0, y0 / 1000.0)


class _Solids:
    """A small world's primitives that one sensor column sees, with what every ray and contact
    test needs of them computed once (the walls do not move): every ray against every primitive
    in one pass, the same answers as World's index gives."""

    def __init__(self, world, column):
        segments = world.segment_returns[:, column] != 0
        boxes = world.box_returns[:, column] != 0
        s = world.segments[segments]
        self.sx, self.sy = s[:, 0], s[:, 1]
        self.ex, self.ey = s[:, 2] - s[:, 0], s[:, 3] - s[:, 1]
        squared_length = self.ex * self.ex + self.ey * self.ey
        self.length = np.sqrt(squared_length)
        # 0 for a segment of no length: its nearest point is its start, as World.nearest has it
        self.inverse_squared_length = np.divide(
            1.0, squared_length, out=np.zeros_like(squared_length), where=squared_length > 0
        )
        b = world.boxes[boxes]
        self.x0, self.y0, self.x1, self.y1 = b[:, 0], b[:, 1], b[:, 2], b[:, 3]
        # laser return of each primitive, segments first, as the columns of a cast's t
        self.laser_returns = np.concatenate(
            [world.segment_returns[segments, 0], world.box_returns[boxes, 0]]
        )
        self.segment_count = len(s)

    def cast(self, ox, oy, angles, max_range):
        """(distance, laser return, incidence) per ray, as World.cast before min_range."""
        n = len(angles)
        ox, oy = ox[:, None], oy[:, None]
        dx, dy = np.cos(angles)[:, None], np.sin(angles)[:, None]
        with np.errstate(divide='ignore', invalid='ignore', over='ignore'):
            t_segments, denom = self._segments(ox, oy, dx, dy)
            t_boxes, through_x = self._boxes(ox, oy, dx, dy)
        t = np.concatenate([t_segments, t_boxes], axis=1)
        if not t.shape[1]:  # this sensor sees nothing in the world
            return np.full(n, max_range), np.zeros(n, np.int64), np.zeros(n)
        rows = np.arange(n)
        first = np.argmin(t, axis=1)
        best = t[rows, first]
        hit = best < max_range
        # the incidence (0 = head-on) of the primitive each ray hits, and only of that one
        incidence = np.zeros(n)
        on_segment = first < self.segment_count
        if on_segment.any():
            r = rows[on_segment]
            with np.errstate(divide='ignore', invalid='ignore'):
                sin_graze = np.abs(denom[r, first[r]]) / self.length[first[r]]
            incidence[r] = np.arccos(np.clip(np.nan_to_num(sin_graze), 0.0, 1.0))
        if not on_segment.all():
            r = rows[~on_segment]
            along_x = through_x[r, first[r] - self.segment_count]
            incidence[r] = np.arccos(np.abs(np.where(along_x, dx[r, 0], dy[r, 0])))
        return (
            np.where(hit, best, max_range),
            np.where(hit, self.laser_returns[first], 0).astype(np.int64),
            np.where(hit, incidence, 0.0),
        )

    def _segments(self, ox, oy, dx, dy):
        """(t of every ray at every segment, inf for a miss; the cross product of their
        directions, |sin| of their angle times the segment's length)."""
        denom = dx * self.ey - dy * self.ex
        wx, wy = self.sx - ox, self.sy - oy
        t = (wx * self.ey - wy * self.ex) / denom
        u = (wx * dy - wy * dx) / denom
        ok = (np.abs(denom) > 1e-12) & (t >= 0) & (u >= -1e-9) & (u <= 1 + 1e-9)
        return np.where(ok, t, np.inf), denom

    def _boxes(self, ox, oy, dx, dy):
        """(t of every ray at every box, 0 from inside one, inf for a miss; whether the ray
        enters through a side x = const)."""
        lo_x, hi_x = _slab(ox, dx, self.x0, self.x1)
        lo_y, hi_y = _slab(oy, dy, self.y0, self.y1)
        enter, leave = np.maximum(lo_x, lo_y), np.minimum(hi_x, hi_y)
        t = np.where((enter < leave) & (leave > 0), np.maximum(enter, 0.0), np.inf)
        return t, lo_x > lo_y

    def nearest(self, x, y, reach):
        """World.nearest over every primitive."""
        u = ((x - self.sx) * self.ex + (y - self.sy) * self.ey) * self.inverse_squared_length
        u = np.minimum(np.maximum(u, 0.0), 1.0)
        cx = np.concatenate([self.sx + u * self.ex, np.minimum(np.maximum(x, self.x0), self.x1)])
        cy = np.concatenate([self.sy + u * self.ey, np.minimum(np.maximum(y, self.y0), self.y1)])
        distance = np.hypot(cx - x, cy - y)
        if not len(distance):
            return Contact(float(reach), 0.0)
        i = int(np.argmin(distance))
        if distance[i] >= reach:
            return Contact(float(reach), 0.0)
        return Contact(float(distance[i]), math.atan2(cy[i] - y, cx[i] - x))


def _slab(origin, direction, low, high):
    """(entry, exit) ray parameters of low..high along one axis; a ray parallel to it has no
    limit from inside and misses from outside."""
    t1, t2 = (low - origin) / direction, (high - origin) / direction
    lo, hi = np.minimum(t1, t2), np.maximum(t1, t2)
    parallel = direction == 0
    if parallel.any():  # rare (an angle whose cosine or sine is exactly 0): not worth 4 passes
        inside = (origin >= low) & (origin < high)
        lo = np.where(parallel, np.where(inside, -np.inf, np.inf), lo)
        hi = np.where(parallel, np.where(inside, np.inf, -np.inf), hi)
    return lo, hi


def _returns(values, n):
    if values is None:
        return np.ones((n, 3), np.int64)
    return np.asarray(values, np.int64).reshape(n, 3)


def _merged_squares(centres, size):
    """Squares of side size around centres, as few boxes covering exactly the same area: runs of
    squares along x (same y, gaps up to size) become one box, then runs of the rest along y.
    A wall of points becomes a few boxes, not thousands (ray casting tests every candidate)."""
    if not len(centres):
        return np.zeros((0, 4))
    centres = np.unique(np.asarray(centres, np.float64), axis=0)
    half = size / 2
    boxes, single = _runs(centres, size, along=0)
    more, rest = _runs(single, size, along=1)
    squares = np.hstack([rest - half, rest + half])
    return np.concatenate([boxes, more, squares])


def _runs(centres, size, along):
    """(boxes of the runs of 2+ squares along axis `along`, centres of the squares in none)."""
    across = 1 - along
    if not len(centres):
        return np.zeros((0, 4)), centres
    order = np.lexsort((centres[:, along], centres[:, across]))
    c = centres[order]
    breaks = (np.diff(c[:, across]) != 0) | (np.diff(c[:, along]) > size)
    start = np.r_[0, np.nonzero(breaks)[0] + 1]
    end = np.r_[start[1:], len(c)] - 1
    long_run = end > start
    half = size / 2
    lo, hi = c[start[long_run]] - half, c[end[long_run]] + half
    boxes = np.empty((int(long_run.sum()), 4))
    boxes[:, along], boxes[:, 2 + along] = lo[:, along], hi[:, along]
    boxes[:, across], boxes[:, 2 + across] = lo[:, across], hi[:, across]
    return boxes, c[start[~long_run]]


def _pieces(segments, size):
    """(index of the original segment, piece) for segments cut into pieces no longer than size."""
    length = np.hypot(segments[:, 2] - segments[:, 0], segments[:, 3] - segments[:, 1])
    count = np.maximum(1, np.ceil(length / size).astype(np.int64))
    ids = np.repeat(np.arange(len(segments)), count)
    k = np.arange(len(ids)) - np.repeat(np.cumsum(count) - count, count)
    s = segments[ids]
    a, b = k / count[ids], (k + 1) / count[ids]
    pieces = np.stack(
        [
            s[:, 0] + a * (s[:, 2] - s[:, 0]),
            s[:, 1] + a * (s[:, 3] - s[:, 1]),
            s[:, 0] + b * (s[:, 2] - s[:, 0]),
            s[:, 1] + b * (s[:, 3] - s[:, 1]),
        ],
        axis=1,
    )
    return ids, pieces.reshape(-1, 4)


def _line_cells(segments, r):
    """Integer cells (i, j) of size r each segment passes through (sampled at r/4)."""
    if not len(segments):
        return np.zeros((0, 2), np.int64)
    length = np.hypot(segments[:, 2] - segments[:, 0], segments[:, 3] - segments[:, 1])
    count = np.ceil(length / (r / 4)).astype(np.int64) + 1
    ids = np.repeat(np.arange(len(segments)), count)
    k = np.arange(len(ids)) - np.repeat(np.cumsum(count) - count, count)
    u = k / np.maximum(count[ids] - 1, 1)
    s = segments[ids]
    px = s[:, 0] + u * (s[:, 2] - s[:, 0])
    py = s[:, 1] + u * (s[:, 3] - s[:, 1])
    return _point_cells(np.stack([px, py], axis=1), r)


def _point_cells(points, r):
    # Stage rounds its comparisons to 1e-5 m (0.01 mm): a point on a cell edge opens that cell
    return (
        np.floor(np.round(np.asarray(points, np.float64) / r, 6)).astype(np.int64).reshape(-1, 2)
    )


def _strip(from_to, thickness):
    """A reflector: the 4 edges of a thickness-wide parallelogram along from → to."""
    x1, y1, x2, y2 = from_to
    length = math.hypot(x2 - x1, y2 - y1) or 1.0
    nx, ny = -(y2 - y1) / length * thickness / 2, (x2 - x1) / length * thickness / 2
    corners = [(x1 + nx, y1 + ny), (x2 + nx, y2 + ny), (x2 - nx, y2 - ny), (x1 - nx, y1 - ny)]
    return np.array([(*corners[i], *corners[(i + 1) % 4]) for i in range(4)])


def _sector_box(cairn):
    """A sector: the box between from and to, rotated by the cairn's theta about its pose."""
    x1, y1, x2, y2 = cairn.from_to
    corners = np.array([(x1, y1), (x2, y1), (x2, y2), (x1, y2)])
    th = math.radians(cairn.th)
    c, s = math.cos(th), math.sin(th)
    rotated = corners @ np.array([[c, s], [-s, c]]) + np.array([cairn.x, cairn.y])
    return np.array([(*rotated[i], *rotated[(i + 1) % 4]) for i in range(4)])


def _yes(value):
    return str(value).lower() not in ('no', 'false', '0')


def _sector_returns(attributes):
    """(laser_return, sonar, obstacle) of a sector type; each attribute on its own (AMRISim's
    loop lets only the last one count: a bug, not copied, §5.2)."""
    laser = 1
    if 'Sim.LaserReflect' in attributes:
        try:
            laser = int(attributes['Sim.LaserReflect']) + 1
        except ValueError:
            laser = 1
    sonar = int(_yes(attributes.get('Sim.SonarReflect', 'yes')))
    obstacle = int(_yes(attributes.get('Sim.Obstacle', 'yes')))
    return [laser, sonar, obstacle]


# ---- loading files ---------------------------------------------------------------
def load_world(path, geometry='exact'):
    """A `.map` (ArMap) or `.yaml` (ROS map) file → World. WorldError for user errors."""
    if not os.path.isfile(path):
        raise WorldError(f'world file {path!r} does not exist')
    if path.lower().endswith(('.yaml', '.yml')):
        occupied, resolution, origin = read_ros_map(path)
        return World.from_occupancy(occupied, resolution, origin, name=os.path.basename(path))
    try:
        with open(path, encoding='latin-1') as f:
            text = f.read()
    except OSError as exc:
        raise WorldError(f'cannot read {path}: {exc}') from None
    armap = parse_armap(text)
    return World.from_armap(armap, geometry, name=os.path.basename(path))


def default_world_path():
    """The office floor shipped with the package (share/p2os_driver/worlds/office.map)."""
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'worlds', 'office.map')
    try:
        from ament_index_python.packages import get_package_share_directory

        shared = os.path.join(get_package_share_directory('p2os_driver'), 'worlds', 'office.map')
        if os.path.isfile(shared):
            return shared
    except (ImportError, LookupError, ValueError, OSError):
        pass  # not installed through ament: the source tree's copy
    return here


def parse_pose(text):
    """'x,y,th' (mm, mm, degrees; ARIA's --start) → (x mm, y mm, th rad)."""
    try:
        x, y, th = (float(v) for v in text.split(','))
    except ValueError:
        raise WorldError(
            f'a start pose looks like 1000,-500,90 (mm, mm, deg), not {text!r}'
        ) from None
    if not all(math.isfinite(v) for v in (x, y, th)) or max(abs(x), abs(y)) > MAX_COORDINATE:
        raise WorldError(f'start pose {text!r} is not a place in a building')
    return (x, y, math.radians(th))


# ---- world_to_map: .map ↔ map.yaml + PGM ----------------------------------------------------
def occupancy_to_armap(occupied, resolution_m, origin_m):
    """Occupied cells → an ArMap with one DATA point per cell centre."""
    rows, cols = np.nonzero(occupied)
    r = resolution_m * 1000.0
    xs = np.round(origin_m[0] * 1000.0 + (cols + 0.5) * r).astype(np.int64)
    ys = np.round(origin_m[1] * 1000.0 + (rows + 0.5) * r).astype(np.int64)
    armap = ArMap(header={'Resolution': [str(int(round(r)))]})
    armap.points = np.stack([xs, ys], axis=1).reshape(-1, 2)
    return armap


def world_to_map_main(argv=None):
    """Convert an ARIA .map to a ROS map.yaml + PGM, or a ROS map to an ARIA .map."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(prog='world_to_map', description=world_to_map_main.__doc__)
    parser.add_argument('source', help='a .map file or a ROS map .yaml')
    parser.add_argument('target', help='the .yaml (a .pgm is written beside it) or .map to write')
    parser.add_argument(
        '--resolution', type=float, default=0.05, help='cell size in m for a ROS map target'
    )
    args = parser.parse_args(argv)
    try:
        if not 0.001 <= args.resolution <= 10:
            raise WorldError('--resolution must be within 0.001..10 m')
        source_is_ros = args.source.lower().endswith(('.yaml', '.yml'))
        target_is_ros = args.target.lower().endswith(('.yaml', '.yml'))
        if source_is_ros == target_is_ros:
            raise WorldError('convert a .map to a .yaml, or a .yaml to a .map')
        if source_is_ros:
            if not os.path.isfile(args.source):
                raise WorldError(f'world file {args.source!r} does not exist')
            occupied, resolution, origin = read_ros_map(args.source)
            armap = occupancy_to_armap(occupied, resolution, origin)
            if not len(armap.points):
                raise WorldError(f'{args.source}: the map has no occupied cells')
            with open(args.target, 'w', encoding='latin-1') as f:
                f.write(write_armap(armap))
            print(f'{args.target}: {len(armap.points)} points')
        else:
            world = load_world(args.source)
            pgm = write_ros_map(world, args.target, args.resolution)
            print(f'{args.target}, {pgm}: {world_stats(world)}')
    except (WorldError, OSError) as exc:
        print(f'error: {exc}', file=sys.stderr)
        return 2
    return 0


def world_stats(world):
    armap = world.armap
    text = f'{len(world.segments)} segments, {len(world.boxes)} cells'
    if armap is not None and armap.skipped:
        text += f', {armap.skipped} malformed lines skipped'
    return text
