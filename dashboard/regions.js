// A pack's region as geometry for the maps: its outline and its bounding box.

/** `[west, south, east, north]` of a region (`bounds`, or the extent of its `geometry`). */
export function regionBounds(region) {
  if (Array.isArray(region.bounds) && region.bounds.length === 4) return region.bounds;
  if (region.geometry) return geometryBounds(region.geometry);
  return null;
}

function geometryBounds(geometry) {
  let west = Infinity, south = Infinity, east = -Infinity, north = -Infinity;
  const visit = (coordinates) => {
    if (typeof coordinates[0] === "number") {
      west = Math.min(west, coordinates[0]);
      east = Math.max(east, coordinates[0]);
      south = Math.min(south, coordinates[1]);
      north = Math.max(north, coordinates[1]);
    } else {
      for (const part of coordinates) visit(part);
    }
  };
  const walk = (node) => {
    if (!node) return;
    if (node.type === "GeometryCollection") node.geometries.forEach(walk);
    else if (node.coordinates) visit(node.coordinates);
  };
  walk(geometry);
  return Number.isFinite(west) ? [west, south, east, north] : null;
}

/** A GeoJSON geometry outlining the region; a box across the antimeridian continues east of 180. */
export function regionOutline(region) {
  if (region.geometry) return region.geometry;
  const bounds = regionBounds(region);
  return bounds ? boxPolygon(bounds) : null;
}

export function boxPolygon([west, south, east, north]) {
  const right = west > east ? east + 360 : east;
  return { type: "Polygon", coordinates: [[[west, south], [right, south], [right, north], [west, north], [west, south]]] };
}

/** Bounds MapLibre's fitBounds takes (east beyond 180 across the antimeridian), clamped to Web Mercator. */
export function fittableBounds([west, south, east, north]) {
  const limit = 85.051128779806604;
  return [[west, Math.max(-limit, south)], [west > east ? east + 360 : east, Math.min(limit, north)]];
}

/**
 * The geometry the API takes from what a person pasted: a geometry as is, a Feature's geometry,
 * a FeatureCollection as a GeometryCollection of its features' geometries.
 */
export function geometryFromGeoJSON(value) {
  if (!value || typeof value !== "object") return value;
  if (value.type === "Feature") return value.geometry;
  if (value.type === "FeatureCollection" && Array.isArray(value.features)) {
    const geometries = value.features.map((feature) => feature && feature.geometry).filter(Boolean);
    return geometries.length === 1 ? geometries[0] : { type: "GeometryCollection", geometries };
  }
  return value;
}
