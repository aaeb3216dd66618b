"""The Pleo's joints as the PDK tools and the monitor name them (docs/protocols/pleo.md §2.5,
§3.5).

``UMF_JOINTS``: CSV key → (uint16 code, id, special). The codes are the PPG's
JID_* values; stored little-endian they read "TS", "HT", ... in a file.
``UMF_ORDER`` is the order csv2umf visits joints: the Python 2 dict order of its
joint table (see py2.dict_order), which also orders vectors of the same frame.
"""

UMF_JOINTS = {
    'RS': (0x5352, 0, False),
    'RE': (0x4552, 1, False),
    'LS': (0x534C, 2, False),
    'LE': (0x454C, 3, False),
    'LH': (0x484C, 4, False),
    'LK': (0x4B4C, 5, False),
    'RH': (0x4852, 6, False),
    'RK': (0x4B52, 7, False),
    'TO': (0x5354, 8, False),
    'TH': (0x5448, 9, True),
    'TV': (0x5456, 10, True),
    'NH': (0x4E48, 11, True),
    'NV': (0x4E56, 12, True),
    'EY': (0x5945, 13, False),
    'JW': (0x574A, 14, False),
    'TR': (0x5254, 15, False),
    'HD': (0x4448, 0, True),
    'SD': (0x4453, 0, False),
    'FS': (0x5346, 0, False),
}
UMF_ORDER = (
    'NH',
    'TO',
    'LE',
    'RS',
    'TV',
    'JW',
    'TR',
    'LK',
    'LH',
    'HD',
    'RE',
    'FS',
    'EY',
    'LS',
    'TH',
    'SD',
    'RH',
    'NV',
    'RK',
)
CODE_TO_KEY = {code: key for key, (code, _, _) in UMF_JOINTS.items()}
