"""bench/real_apps.py's parts: finding and building the applications (sources), what is run
(cases), the SMPI captures (capture), the placements and replays (replay), the tables (table).
Nothing here holds or patches third-party code: it is read from the directory the user gives."""
