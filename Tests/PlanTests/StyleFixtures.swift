/// Real style documents, kept in the test suite as data so tests never read outside it.
enum StyleFixtures {
    /// `../shared/fixtures/ne/style.json` with `{{BASE}}` replaced: font stacks inside a `case`
    /// expression, a 256 px raster source, a GeoJSON source with a URL.
    static let neBase = "https://fixtures.example/ne"
    static let neStyle = #"""
    {
     "version": 8,
     "name": "Natural Earth fixture",
     "center": [0, 20],
     "zoom": 1,
     "sources": {
      "ne": {"type": "vector", "url": "https://fixtures.example/ne/tiles.json"},
      "relief": {"type": "raster", "url": "https://fixtures.example/ne/raster.json", "tileSize": 256},
      "cities-geojson": {"type": "geojson", "data": "https://fixtures.example/ne/cities.geojson"}
     },
     "sprite": "https://fixtures.example/ne/sprite",
     "glyphs": "https://fixtures.example/ne/fonts/{fontstack}/{range}.pbf",
     "layers": [
      {"id": "bg", "type": "background", "paint": {"background-color": "#a0c8f0"}},
      {"id": "relief", "type": "raster", "source": "relief", "paint": {"raster-opacity": 0.4}},
      {"id": "countries", "type": "fill", "source": "ne", "source-layer": "countries",
       "paint": {"fill-color": "#f2efe9", "fill-outline-color": "#888"}},
      {"id": "cities", "type": "symbol", "source": "ne", "source-layer": "cities",
       "layout": {"icon-image": "dot", "icon-allow-overlap": true}},
      {"id": "city-labels", "type": "symbol", "source": "cities-geojson",
       "layout": {
        "text-field": ["get", "name"],
        "text-font": ["case", ["<", ["length", ["get", "name"]], 6],
                      ["literal", ["Noto Sans Bold"]], ["literal", ["Noto Sans Regular"]]],
        "text-size": 11
       }}
     ]
    }
    """#
    static let neTileJSON = #"""
    {"tilejson": "3.0.0", "name": "ne", "tiles": ["https://fixtures.example/ne/tiles/{z}/{x}/{y}.pbf"], "minzoom": 0, "maxzoom": 6, "bounds": [-180, -85.0511, 180, 85.0511], "vector_layers": [{"id": "countries", "fields": {}}, {"id": "cities", "fields": {}}]}
    """#
    static let neRasterJSON = #"""
    {"tilejson": "3.0.0", "name": "relief", "tiles": ["https://fixtures.example/ne/raster/{z}/{x}/{y}.png"], "minzoom": 1, "maxzoom": 5, "tileSize": 256, "bounds": [-180, -85.0511, 180, 85.0511]}
    """#

    /// maplibre/demotiles `style.json` (the MapLibre demo style), trimmed: the `countries-fill`
    /// match lists and the inline GeoJSON polygons are shortened; sources, glyphs and every
    /// symbol layer are as published.
    static let demotilesURL = "https://demotiles.maplibre.org/style.json"
    static let demotilesStyle = #"""
    {
        "id": "43f36e14-e3f5-43c1-84c0-50a9c80dc5c7",
        "name": "MapLibre",
        "zoom": 0.8619833357855968,
        "pitch": 0,
        "center": [17.65431710431244, 32.954120326746775],
        "glyphs": "https://demotiles.maplibre.org/font/{fontstack}/{range}.pbf",
        "layers": [
            {"id": "background", "type": "background", "paint": {"background-color": "#D8F2FF"},
             "filter": ["all"], "layout": {"visibility": "visible"}, "maxzoom": 24},
            {"id": "coastline", "type": "line",
             "paint": {"line-blur": 0.5, "line-color": "#198EC8",
                       "line-width": {"stops": [[0, 2], [6, 6], [14, 9], [22, 18]]}},
             "filter": ["all"], "layout": {"line-cap": "round", "line-join": "round", "visibility": "visible"},
             "source": "maplibre", "maxzoom": 24, "minzoom": 0, "source-layer": "countries"},
            {"id": "countries-fill", "type": "fill",
             "paint": {"fill-color": ["match", ["get", "ADM0_A3"],
                 ["ARM", "ATG", "AUS", "BTN", "CAN"], "#D6C7FF",
                 ["AZE", "BGD", "CHL", "CMR", "CSI"], "#EBCA8A",
                 ["ATA", "GRL"], "#FFFFFF",
                 "#EAB38F"]},
             "filter": ["all"], "layout": {"visibility": "visible"},
             "source": "maplibre", "maxzoom": 24, "source-layer": "countries"},
            {"id": "countries-boundary", "type": "line",
             "paint": {"line-color": "rgba(255, 255, 255, 1)",
                       "line-width": {"stops": [[1, 1], [6, 2], [14, 6], [22, 12]]},
                       "line-opacity": {"stops": [[3, 0.5], [6, 1]]}},
             "layout": {"line-cap": "round", "line-join": "round", "visibility": "visible"},
             "source": "maplibre", "maxzoom": 24, "source-layer": "countries"},
            {"id": "geolines", "type": "line",
             "paint": {"line-color": "#1077B0", "line-opacity": 1, "line-dasharray": [3, 3]},
             "filter": ["all", ["!=", "name", "International Date Line"]],
             "layout": {"visibility": "visible"}, "source": "maplibre", "maxzoom": 24, "source-layer": "geolines"},
            {"id": "geolines-label", "type": "symbol",
             "paint": {"text-color": "#1077B0", "text-halo-blur": 1,
                       "text-halo-color": "rgba(255, 255, 255, 1)", "text-halo-width": 1},
             "filter": ["all", ["!=", "name", "International Date Line"]],
             "layout": {"text-font": ["Open Sans Semibold"],
                        "text-size": {"stops": [[2, 12], [6, 16]]},
                        "text-field": "{name}", "visibility": "visible", "symbol-placement": "line"},
             "source": "maplibre", "maxzoom": 24, "minzoom": 1, "source-layer": "geolines"},
            {"id": "countries-label", "type": "symbol",
             "paint": {"text-color": "rgba(8, 37, 77, 1)",
                       "text-halo-blur": {"stops": [[2, 0.2], [6, 0]]},
                       "text-halo-color": "rgba(255, 255, 255, 1)",
                       "text-halo-width": {"stops": [[2, 1], [6, 1.6]]}},
             "filter": ["all"],
             "layout": {"text-font": ["Open Sans Semibold"],
                        "text-size": {"stops": [[2, 10], [4, 12], [6, 16]]},
                        "text-field": {"stops": [[2, "{ABBREV}"], [4, "{NAME}"]]},
                        "visibility": "visible", "text-max-width": 10,
                        "text-transform": {"stops": [[0, "uppercase"], [2, "none"]]}},
             "source": "maplibre", "maxzoom": 24, "minzoom": 2, "source-layer": "centroids"},
            {"id": "crimea-fill", "type": "fill", "source": "crimea", "paint": {"fill-color": "#D6C7FF"}},
            {"id": "happy-2024", "type": "fill", "source": "happy-2024", "paint": {"fill-color": "#FFFFFF"}},
            {"id": "happy-2024-outline", "type": "line", "source": "happy-2024",
             "paint": {"line-color": "#198EC8", "line-width": 1.5}}
        ],
        "bearing": 0,
        "sources": {
            "maplibre": {"url": "https://demotiles.maplibre.org/tiles/tiles.json", "type": "vector"},
            "crimea": {"type": "geojson", "data": {"type": "Feature", "geometry": {"type": "Polygon",
                "coordinates": [[[34.00905273547181, 46.55925987559425], [33.64325260204026, 46.34533545368038],
                                 [33.628682598560204, 46.12569762665683], [34.00905273547181, 46.55925987559425]]]}}},
            "happy-2024": {"type": "geojson", "data": {"type": "FeatureCollection", "features": [
                {"type": "Feature", "properties": { }, "geometry": {"type": "MultiPolygon", "coordinates": [[[
                    [38.599439, 36.670305], [42.713024, 28.513444], [42.272282, 27.817294], [38.599439, 36.670305]]]]}}]}}
        },
        "version": 8,
        "metadata": {"openmaptiles:version": "3.x"}
    }
    """#
    /// The demotiles TileJSON's fields that matter to a plan.
    static let demotilesTileJSON = #"""
    {"tilejson": "2.0.0", "name": "MapLibre demo tiles", "format": "pbf", "scheme": "xyz",
     "tiles": ["https://demotiles.maplibre.org/tiles/{z}/{x}/{y}.pbf"], "minzoom": 0, "maxzoom": 6,
     "bounds": [-180, -85.0511, 180, 85.0511]}
    """#

    /// openmaptiles/osm-bright-gl-style `style.json` (an OpenMapTiles-schema style), trimmed to
    /// a representative subset of its ~100 layers; sources, sprite, glyphs (with the `{key}`
    /// placeholder MapLibre leaves alone) and the three font stacks are as published.
    static let osmBrightURL = "https://openmaptiles.github.io/osm-bright-gl-style/style.json"
    static let osmBrightStyle = #"""
    {
      "version": 8,
      "name": "OSM Bright",
      "metadata": {"mapbox:type": "template", "openmaptiles:version": "3.x"},
      "sources": {
        "openmaptiles": {"type": "vector", "url": "https://free.tilehosting.com/data/v3.json?key={key}"}
      },
      "sprite": "https://openmaptiles.github.io/osm-bright-gl-style/sprite",
      "glyphs": "https://free.tilehosting.com/fonts/{fontstack}/{range}.pbf?key={key}",
      "layers": [
        {"id": "background", "type": "background", "paint": {"background-color": "#f8f4f0"}},
        {"id": "landcover-glacier", "type": "fill", "metadata": {"mapbox:group": "1444849388993.3071"},
         "source": "openmaptiles", "source-layer": "landcover", "filter": ["==", "subclass", "glacier"],
         "layout": {"visibility": "visible"},
         "paint": {"fill-color": "#fff", "fill-opacity": {"base": 1, "stops": [[0, 0.9], [10, 0.3]]}}},
        {"id": "water", "type": "fill", "metadata": {"mapbox:group": "1444849382550.77"},
         "source": "openmaptiles", "source-layer": "water", "layout": {"visibility": "visible"},
         "paint": {"fill-color": "hsl(210, 67%, 85%)"}},
        {"id": "waterway-river", "type": "line", "metadata": {"mapbox:group": "1444849382550.77"},
         "source": "openmaptiles", "source-layer": "waterway",
         "filter": ["all", ["==", "class", "river"], ["!=", "brunnel", "tunnel"]],
         "layout": {"line-cap": "round"},
         "paint": {"line-color": "#a0c8f0", "line-width": {"base": 1.2, "stops": [[10, 0.8], [20, 6]]}}},
        {"id": "highway-shield", "type": "symbol", "source": "openmaptiles", "source-layer": "transportation_name",
         "minzoom": 8,
         "filter": ["all", ["<=", "ref_length", 6], ["==", "$type", "LineString"],
                    ["!in", "network", "us-interstate", "us-highway", "us-state"]],
         "layout": {"text-size": 10, "icon-image": "road_{ref_length}", "icon-rotation-alignment": "viewport",
                    "symbol-spacing": 200, "text-font": ["Noto Sans Regular"],
                    "symbol-placement": {"base": 1, "stops": [[10, "point"], [11, "line"]]},
                    "text-rotation-alignment": "viewport", "icon-size": 1, "text-field": "{ref}"},
         "paint": {}},
        {"id": "airport-label-major", "type": "symbol", "source": "openmaptiles", "source-layer": "aerodrome_label",
         "minzoom": 10, "filter": ["all", ["has", "iata"]],
         "layout": {"text-padding": 2, "text-font": ["Noto Sans Regular"], "text-anchor": "top",
                    "icon-image": "airport_11", "text-field": "{name:latin}\n{name:nonlatin}",
                    "text-offset": [0, 0.6], "text-size": 12, "text-max-width": 9, "visibility": "visible",
                    "icon-size": 1, "text-optional": true},
         "paint": {"text-halo-blur": 0.5, "text-color": "#666", "text-halo-width": 1, "text-halo-color": "#ffffff"}},
        {"id": "park-label", "type": "symbol", "metadata": {"mapbox:group": "1444849242106.713"},
         "source": "openmaptiles", "source-layer": "park_label", "filter": ["all", ["==", "rank", 1]],
         "layout": {"text-letter-spacing": 0.1, "text-size": {"base": 1.2, "stops": [[12, 10], [15, 14]]},
                    "text-font": ["Noto Sans Bold"], "text-field": "{name:latin}\n{name:nonlatin}",
                    "text-transform": "none", "text-max-width": 9, "visibility": "visible"},
         "paint": {"text-color": "rgba(38, 92, 46, 1)", "text-halo-width": 1.2}, "minzoom": 0},
        {"id": "place-city-capital", "type": "symbol", "metadata": {"mapbox:group": "1444849242106.713"},
         "source": "openmaptiles", "source-layer": "place",
         "filter": ["all", ["==", "capital", 2], ["==", "class", "city"]],
         "layout": {"text-font": ["Noto Sans Regular"], "text-size": {"base": 1.2, "stops": [[7, 14], [11, 24]]},
                    "text-field": "{name:latin}\n{name:nonlatin}", "text-max-width": 8, "icon-image": "star_11",
                    "text-offset": [0.4, 0], "icon-size": 0.8, "text-anchor": "left", "visibility": "visible"},
         "paint": {"text-color": "#333", "text-halo-width": 1.2, "text-halo-color": "rgba(255,255,255,0.8)"}},
        {"id": "place-country-other", "type": "symbol", "metadata": {"mapbox:group": "1444849242106.713"},
         "source": "openmaptiles", "source-layer": "place",
         "filter": ["all", ["==", "class", "country"], [">=", "rank", 3], ["!has", "iso_a2"]],
         "layout": {"text-font": ["Noto Sans Italic"], "text-field": "{name:latin}",
                    "text-size": {"stops": [[3, 11], [7, 17]]}, "text-transform": "uppercase",
                    "text-max-width": 6.25, "visibility": "visible"},
         "paint": {"text-halo-blur": 1, "text-color": "#334", "text-halo-width": 2}},
        {"id": "place-country-1", "type": "symbol", "metadata": {"mapbox:group": "1444849242106.713"},
         "source": "openmaptiles", "source-layer": "place",
         "filter": ["all", ["==", "class", "country"], ["==", "rank", 1], ["has", "iso_a2"]],
         "layout": {"text-font": ["Noto Sans Bold"], "text-field": "{name:latin}",
                    "text-size": {"stops": [[1, 11], [4, 17]]}, "text-transform": "uppercase",
                    "text-max-width": 6.25, "visibility": "visible"},
         "paint": {"text-halo-blur": 1, "text-color": "#334", "text-halo-width": 2}}
      ]
    }
    """#
    /// The OpenMapTiles v3 TileJSON's fields that matter to a plan.
    static let osmBrightTileJSONURL = "https://free.tilehosting.com/data/v3.json?key={key}"
    static let osmBrightTileJSON = #"""
    {"tilejson": "2.0.0", "name": "OpenMapTiles", "format": "pbf", "minzoom": 0, "maxzoom": 14,
     "tiles": ["https://free.tilehosting.com/data/v3/{z}/{x}/{y}.pbf.pict?key={key}"],
     "bounds": [-180, -85.0511, 180, 85.0511]}
    """#
}
