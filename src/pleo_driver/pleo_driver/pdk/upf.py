"""The UPF project file (docs/protocols/pleo.md §2.7): macros, options and resources.

Macro rules of xmlmacro: the key table starts as a copy of the environment;
every ``<set>`` is applied in document order, then every ``<set-default>`` whose
key is still undefined; then two passes of ``${KEY}`` substitution over every
attribute (so nesting resolves two levels deep); ``$${KEY}`` is a literal
``${KEY}``; an undefined key is left as it is, with a warning.
"""

import dataclasses
import os
import re
import xml.etree.ElementTree as ElementTree
from typing import Dict, List, Optional, Tuple

from .errors import BuildError

RESOURCE_TAGS = ('sound', 'motion', 'command', 'script', 'file', 'user_property')
_KEY = re.compile(r'\$(\$?)\{([^}]*)\}')
TRUE_WORDS = ('true', 'yes', '1', 'on')


@dataclasses.dataclass(frozen=True)
class Resource:
    kind: str  # one of RESOURCE_TAGS
    path: str  # as written (after macros); relative to the project folder
    attributes: Dict[str, str]

    @property
    def stem(self):
        """The resource's name everywhere: its file's base name without the extension."""
        return os.path.splitext(os.path.basename(self.path))[0]


@dataclasses.dataclass
class Project:
    name: str
    folder: str
    options: Dict[str, Dict[str, str]]  # option element tag → its attributes
    resources: List[Resource]
    option_present: Tuple[str, ...]
    warnings: List[str]

    def option(self, tag, attribute='value', default=''):
        return self.options.get(tag, {}).get(attribute, default)

    def has_option(self, tag):
        return tag in self.option_present

    def directory(self, which, default):
        """build / include / temp directory, absolute."""
        value = self.options.get(f'directories/{which}', {}).get('value') or default
        return os.path.normpath(os.path.join(self.folder, value))

    def include_dirs(self):
        value = self.option('include')
        return [
            os.path.normpath(os.path.join(self.folder, part)) for part in value.split(':') if part
        ]

    def pawn_template(self):
        return self.option('pawn')

    def path(self, resource):
        return os.path.normpath(os.path.join(self.folder, resource.path))

    def of_kind(self, kind):
        return [r for r in self.resources if r.kind == kind]

    def user_properties(self):
        """[(name, value)]: the name is in the ``path`` attribute; value defaults to 0."""
        properties = []
        for resource in self.of_kind('user_property'):
            value = resource.attributes.get('value', '0')
            try:
                properties.append((resource.path, int(value, 0)))
            except ValueError:
                raise BuildError(
                    f'user property {resource.path!r}: value {value!r} is not an integer'
                ) from None
        return properties


LITERAL = '\0'  # stands for a "$" of "$${KEY}" until both passes are done


def expand(text, keys, warnings):
    """One substitution pass over one attribute value."""

    def replace(match):
        literal, key = match.groups()
        if literal:
            return LITERAL + '{' + key + '}'
        if key not in keys:
            warnings.append(f"Key '{key}' not defined")
            return match.group(0)
        return keys[key]

    return _KEY.sub(replace, text)


def apply_macros(root, environment):
    keys, warnings = dict(environment), []
    for element in root.iter('set'):
        keys[element.get('name', '')] = element.get('value', '')
    for element in root.iter('set-default'):
        keys.setdefault(element.get('name', ''), element.get('value', ''))
    for _ in range(2):
        for element in root.iter():
            for attribute, value in element.attrib.items():
                element.set(attribute, expand(value, keys, warnings))
    for element in root.iter():
        for attribute, value in element.attrib.items():
            element.set(attribute, value.replace(LITERAL, '$'))
    return list(dict.fromkeys(warnings))


def load(path, environment: Optional[dict] = None):
    try:
        with open(path, 'rb') as handle:
            root = ElementTree.parse(handle).getroot()
    except OSError as exc:
        raise BuildError(f'cannot read project {path}: {exc.strerror}') from None
    except ElementTree.ParseError as exc:
        raise BuildError(f'{path} is not valid XML: {exc}') from None
    warnings = apply_macros(root, os.environ if environment is None else environment)
    name = root.get('name')
    if not name:
        raise BuildError(
            f'{path}: the root element has no name attribute (the URF is named after it)'
        )
    options, present = _options(root)
    return Project(
        name=name,
        folder=os.path.dirname(os.path.abspath(path)),
        options=options,
        resources=_resources(root, path),
        option_present=present,
        warnings=warnings,
    )


def _options(root):
    """Option elements by tag (``directories/build`` for the nested directory ones)."""
    options, present = {}, []
    for block in root.iter('options'):
        for element in block.iter():
            if element is block:
                continue
            options.setdefault(element.tag, dict(element.attrib))
            present.append(element.tag)
        directories = block.find('directories')
        if directories is not None:
            for element in directories:
                options[f'directories/{element.tag}'] = dict(element.attrib)
    return options, tuple(present)


def _resources(root, path):
    resources = []
    for block in root.iter('resources'):
        for element in block:
            if not isinstance(element.tag, str):  # comments
                continue
            if element.tag not in RESOURCE_TAGS:
                raise BuildError(
                    f'{path}: unknown resource <{element.tag}> (known: {", ".join(RESOURCE_TAGS)})'
                )
            if not element.get('path'):
                raise BuildError(f'{path}: a <{element.tag}> resource without a path')
            resources.append(Resource(element.tag, element.get('path'), dict(element.attrib)))
    return resources
