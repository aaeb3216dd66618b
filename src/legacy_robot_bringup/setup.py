import glob
import os

from setuptools import setup

package_name = 'legacy_robot_bringup'
# launch/ and config/ live at the repository root, shared by every robot.
repo_root = os.path.relpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))

setup(
    name=package_name,
    version='0.2.0',
    packages=[package_name],
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
        (
            'share/' + package_name + '/launch',
            sorted(glob.glob(os.path.join(repo_root, 'launch', '*.launch.py'))),
        ),
        (
            'share/' + package_name + '/config',
            sorted(glob.glob(os.path.join(repo_root, 'config', '*.yaml'))),
        ),
        (
            'share/' + package_name + '/config/foxglove',
            sorted(glob.glob(os.path.join(repo_root, 'config', 'foxglove', '*.json'))),
        ),
        (
            'share/' + package_name + '/recordings',
            sorted(glob.glob(os.path.join(repo_root, 'recordings', '*.mcap'))),
        ),
    ],
    install_requires=['setuptools'],
    zip_safe=True,
    maintainer='Legacy robot drivers maintainers',
    maintainer_email='maintainers@legacy-robots.dev',
    description='Bring-up of the legacy robot drivers.',
    license='Apache-2.0',
    extras_require={'test': ['pytest']},
    entry_points={
        'console_scripts': [
            'bringup = legacy_robot_bringup.compose:main',
            'demo = legacy_robot_bringup.demo:main',
            'recording = legacy_robot_bringup.recordings:main',
            'foxglove_relay = legacy_robot_bringup.foxglove:main',
        ],
    },
)
